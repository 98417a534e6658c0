# topology-labeler: the node agent and the cluster tools in one small image.
# Stage 1 builds wheels (the project and its dependencies) into a virtualenv;
# stage 2 copies only that virtualenv: no compilers, no pip cache, no sources.
FROM python:3.11-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY labeler ./labeler
RUN python -m venv /opt/topology-labeler \
    && /opt/topology-labeler/bin/pip install --no-compile . \
    && /opt/topology-labeler/bin/pip uninstall --yes pip

FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="topology-labeler" \
      org.opencontainers.image.description="GPU/NPU network-topology labels for Kubernetes nodes" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/topology-labeler/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/topology-labeler /opt/topology-labeler
# No setuid/setgid programs: the Ascend DaemonSet must run privileged (to open the NPU
# management devices), where allowPrivilegeEscalation cannot be false; with no such
# program in the image there is nothing to escalate through.
RUN find / -xdev -type f -perm /6000 -exec chmod a-s {} +
# 65532: the conventional "nonroot" user; the manifests run with the same uid.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["topology-labeler"]
CMD ["--help"]
