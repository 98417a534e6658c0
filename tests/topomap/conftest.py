from tests.topomap.browser import chrome

__all__ = ["chrome"]
