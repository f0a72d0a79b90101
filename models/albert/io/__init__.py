"""Models in and out of files: Hugging Face directories, Google's TF1 releases, the trainer's own
checkpoints, SavedModels for serving, each written whole or not at all."""
