from tests.browser.browser import chrome

__all__ = ["chrome"]
