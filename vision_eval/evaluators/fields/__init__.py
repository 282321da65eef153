"""``field_accuracy``: structured extraction (invoices, forms, receipts) scored field by field. The evaluator and its
settings (:mod:`.field_accuracy`), its one row function (:mod:`.field_row`), the comparisons per match type
(:mod:`.matching`), JSON reading, paths and numbers (:mod:`.values`) and dates (:mod:`.dates`)."""
