"""One module per fuzz target; each has ``test_one_input(data: bytes) -> None``."""

TARGETS = ("to_arrow", "records", "codecs", "segment", "convert", "builder", "advise")
