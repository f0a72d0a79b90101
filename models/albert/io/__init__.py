"""Models in and out of files: Hugging Face directories, Google's TF1 releases, the trainer's own
checkpoints, SavedModels for serving, each written whole or not at all.

`huggingface` and `google_tf1` (the two published layouts: tensor names, files, loading),
`weights` (their tensors into a model, checked), `model_dir` (what a directory holds, without
TensorFlow), `pretrained` (load_pretrained, load_model, save_pretrained), `export_dir` (where a
SavedModel may go, checked without TensorFlow), `savedmodel` (SavedModels for serving, a
fine-tuner's --export_dir), `task_card` (what an export carries). Whole directories are written
through albert.fs. Model classes come in as arguments: nothing here imports albert.model.modeling
but savedmodel, whose model_class names a class for an export task."""
