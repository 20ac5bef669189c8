"""The dashboard maintainers open every morning: per-fork figures, what is in flight, trunk health.

``feed`` is its input (plain data the workers write), ``store`` where it is kept, ``view`` the
pure page model, ``plot`` the inline SVG, ``access`` who may look, ``web`` the Flask views.
See docs/dashboard.md.
"""
