"""The measurements of scripts/benchmark.py, one module each; the script is only their command
line (flags, which measurements run, the JSON). Each module imports TensorFlow, PyTorch or
psutil inside its functions, so the script checks its flags before any of them starts.

    step.py           the training update: speed, FLOPs, MFU (--compare_hf, --compare_recompute)
    memory.py         its measured peak memory beside the memory plan (--memory)
    profile.py        where the step time goes: TensorFlow ops and XLA thunks (--profile)
    hf_reference.py   transformers' PyTorch AlbertForPreTraining, the same update (--compare_hf)
    reader.py         the TFRecord reader (--input_pipeline)
    restart.py        putting the input stream back where a run stopped (--restart_cost)
    horovod.py        weak scaling under horovodrun (--horovod)
    data_prep.py      create_pretraining_data (--data_prep)
    squad_padding.py  SQuAD windows padded to --max_seq_length against to their batch
    relaunch.py       running scripts/benchmark.py again in a fresh process (restart, horovod)
"""
