"""Models in and out of files: Hugging Face directories, Google's TF1 releases, the trainer's own
checkpoints, SavedModels for serving, each written whole or not at all.

`huggingface` and `google_tf1` (the two published layouts: tensor names, files, loading),
`weights` (their tensors into a model, checked), `pretrained` (what a directory holds;
load_pretrained, load_model, save_pretrained), `savedmodel` (SavedModels for serving, the checks
on where they go, a fine-tuner's --export_dir), `task_card` (what an export carries). Whole
directories are written through albert.fs. Model classes come in as arguments: nothing here
imports albert.model.modeling but savedmodel.model_class, which names a class for an export
task."""
