"""Cached generator polynomial g(x) of BCH(9088, 8192, t=64) (:mod:`memwall.golden.kvnand.bch`).

``GENERATOR_HEX``: g(x) as an integer in lowercase hex, bit i = coefficient of x^i (897 bits,
degree 896), over GF(2^14) = GF(2)[x] / (x^14 + x^10 + x^6 + x + 1). ``GENERATOR_SHA256``: the
SHA-256 of the ASCII hex string, checked when :mod:`memwall.golden.kvnand.bch` is imported.
Recomputed and compared by tests/kvnand/test_golden_bch.py; to regenerate::

    from memwall.golden import bch
    bch.generator_hex(bch.compute_generator())
"""

GENERATOR_HEX = (
    "1f7b14e733603c79eeb2ed60fd7a2816c649dd31e078e4c9b1f1115c551f11d134506168bd0"
    "fd485d6baad116d6cefe15ee5021fb38b2e031001d099f8829154b4d7311a5b33ff1c3a1233"
    "7ac2ab152a786846aa15d29d8d585bb0f366ef38543bdf62456d62380ba45c7f4e1017a1055"
)
GENERATOR_SHA256 = "48a9588727d3749d66dfe8c9184057cbae3f56551301cf9c97c08ddc65d196ff"
