"""The pure scheduler: reads dataclasses from app.structs, returns plans. No I/O here."""
