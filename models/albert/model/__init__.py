"""The network: its config and presets, the layers, keyed dropout and recompute, and the model
classes (each declares its task heads). Nothing here reads or writes files: that is albert.io."""

# The int32 [B, S] inputs every model class takes, in the order a SavedModel's signature lists
# them (the model classes, the tasks' inference, the export and the serving tools share it).
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
