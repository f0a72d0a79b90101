"""Data: text -> pretraining TFRecords, the tf.data readers, SQuAD features."""
