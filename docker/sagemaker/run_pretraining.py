"""SageMaker entry point (sagemaker_program=run_pretraining.py): runs albert.run_pretraining."""

import sys

from albert.sagemaker_entry import main

if __name__ == "__main__":
    sys.exit(main("run_pretraining"))
