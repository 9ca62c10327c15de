"""Unit-family packages: each ``memwall.families.<name>`` defines ``FAMILY``, a
:class:`memwall.family.Family`, and is found by :func:`memwall.family.families`.

A family kept outside this tree (a user's own, or the test suite's) lives in a folder named by
``MEMWALL_FAMILY_PATH`` (``os.pathsep``-separated): ``<folder>/<name>/__init__.py`` is imported
as ``memwall.families.<name>``, exactly as the families here.
"""

from memwall.family import extend_family_path

extend_family_path(__path__)
