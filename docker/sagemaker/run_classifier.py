"""SageMaker entry point (sagemaker_program=run_classifier.py): runs albert.run_classifier."""

import sys

from albert.sagemaker_entry import main

if __name__ == "__main__":
    sys.exit(main("run_classifier"))
