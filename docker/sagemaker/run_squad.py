"""SageMaker entry point (sagemaker_program=run_squad.py): the installed albert.run_squad."""

import sys

from albert.sagemaker_entry import main

if __name__ == "__main__":
    sys.exit(main("run_squad"))
