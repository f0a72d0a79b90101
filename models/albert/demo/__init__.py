"""The bundled demo data, written from CPython's own help texts so that nothing is downloaded:
a corpus (sample), a language of facts (facts), SQuAD questions (squad_sample) and
classification tasks (classification_sample). Each generator is also a command."""
