"""Kubernetes `Status` error bodies, built like k8s.io/apimachinery/pkg/api/errors."""

from __future__ import annotations

from typing import Any

from .resources import Resource
from .validation import FieldError

CONFLICT_MSG = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


class ApiError(Exception):
    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(res: Resource, name: str, kind: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if res.group:
        d["group"] = res.group
    d["kind"] = kind or res.plural
    return d


def not_found(res: Resource, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{res.group_resource} "{name}" not found', _details(res, name)
    )


def already_exists(res: Resource, name: str) -> ApiError:
    return ApiError(
        409, "AlreadyExists", f'{res.group_resource} "{name}" already exists', _details(res, name)
    )


def conflict(res: Resource, name: str, why: str = CONFLICT_MSG) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res.group_resource} "{name}": {why}',
        _details(res, name),
    )


def invalid(res: Resource, name: str, errs: list[FieldError]) -> ApiError:
    # errors.NewInvalid: "<Kind[.group]> "<name>" is invalid: <aggregate>"; an aggregate of
    # several errors prints as "[e1, e2]".
    agg = str(errs[0]) if len(errs) == 1 else "[" + ", ".join(str(e) for e in errs) + "]"
    details = _details(res, name, kind=res.kind)
    details["causes"] = [e.cause() for e in errs]
    return ApiError(422, "Invalid", f'{res.group_kind} "{name}" is invalid: {agg}', details)


def apply_needs_field_manager() -> ApiError:
    """An apply patch without fieldManager: PatchOptions validation's 422."""
    cause = {
        "reason": "FieldValueRequired",
        "message": "Required value: is required for apply patch",
        "field": "fieldManager",
    }
    return ApiError(
        422,
        "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
        "for apply patch",
        {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [cause]},
    )


def bad_request(msg: str) -> ApiError:
    return ApiError(400, "BadRequest", msg)


def not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def method_not_allowed() -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def not_acceptable(message: str) -> ApiError:
    """406 from converting an answer (``as=`` in Accept) to a kind that does not fit it."""
    return ApiError(406, "NotAcceptable", message)


def unsupported_media(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
        {},
    )


def expired(msg: str) -> ApiError:
    return ApiError(410, "Expired", msg)


def too_many_requests(retry_after: int | None) -> ApiError:
    details: dict[str, Any] = {}
    headers = {}
    if retry_after is not None:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return ApiError(
        429, "TooManyRequests", "Too many requests, please try again later.", details, headers
    )


def by_code(code: int, message: str | None = None, retry_after: int | None = None) -> ApiError:
    """Error for an injected fault: the reason the real server uses for that status code."""
    if code == 429:
        err = too_many_requests(retry_after)
        if message:
            err.message = message
        return err
    reasons = {
        400: ("BadRequest", "the server rejected our request for an unknown reason"),
        401: ("Unauthorized", "Unauthorized"),
        403: ("Forbidden", "forbidden: injected fault"),
        404: ("NotFound", "the server could not find the requested resource"),
        409: ("Conflict", CONFLICT_MSG),
        410: ("Gone", "the resource is gone"),
        500: ("InternalError", "Internal error occurred: injected fault"),
        503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
        504: ("Timeout", "the server was unable to return a response in the time allotted"),
    }
    reason, default = reasons.get(code, ("InternalError", f"injected fault {code}"))
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return ApiError(code, reason, message or default, {}, headers)
