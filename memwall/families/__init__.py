"""Unit-family packages: each ``memwall.families.<name>`` defines ``FAMILY``, a
:class:`memwall.family.Family`, and is found by :func:`memwall.family.families`.

The package path is extended over ``sys.path`` (:func:`pkgutil.extend_path`), so a folder
``<entry>/memwall/families/<name>/`` on any ``sys.path`` entry adds a family without touching
this tree.
"""

import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)
