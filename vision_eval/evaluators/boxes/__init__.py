"""``bbox_iou``: detection boxes against expected boxes. The evaluator and its row function (:mod:`.bbox_iou`); box
parsing, IoU, Hungarian matching and COCO-style AP (:mod:`.geometry`)."""
