"""Launch run_pretraining or run_squad as an Amazon SageMaker training job reading FSx for Lustre.

    export SAGEMAKER_ROLE=arn:aws:iam::123456789012:role/SageMakerRole
    export SAGEMAKER_IMAGE_NAME=123456789012.dkr.ecr.us-east-1.amazonaws.com/albert-tf:latest
    export SAGEMAKER_FSX_ID=fs-0123456789abcdef0 SAGEMAKER_FSX_MOUNT_NAME=abcdefgh
    export SAGEMAKER_SUBNET_IDS=subnet-0123 SAGEMAKER_SECURITY_GROUP_IDS=sg-0123
    export SAGEMAKER_OUTPUT_S3_URI=s3://my-bucket/albert/output
    python scripts/launch_sagemaker.py --entry_point run_pretraining --sm_job_name albert-base \\
        --instance_type ml.p4d.24xlarge --instance_count 2 --dry_run \\
        --train_dir albert/train --val_dir albert/validation --model_size base \\
        --per_gpu_batch_size 32 --total_steps 125000 --warmup_steps 3125 --precision bf16

Every flag this launcher does not know is passed to the training script as a hyperparameter, and
--filesystem_prefix points at the FSx channel inside the container. --dry_run prints the
CreateTrainingJob request as JSON and submits nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tarfile
import tempfile
import time

CHANNEL = "fsx"
CHANNEL_PATH = f"/opt/ml/input/data/{CHANNEL}"
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
IMAGE_CODE_DIR = "/opt/albert/docker/sagemaker"  # entry scripts baked into docker/Dockerfile
ENTRY_POINTS = ("run_pretraining", "run_squad")

# GPUs per instance type: one Horovod process per GPU.
GPUS_PER_INSTANCE = {
    "ml.p3.2xlarge": 1, "ml.p3.8xlarge": 4, "ml.p3.16xlarge": 8, "ml.p3dn.24xlarge": 8,
    "ml.p4d.24xlarge": 8, "ml.p4de.24xlarge": 8, "ml.p5.48xlarge": 8, "ml.p5e.48xlarge": 8,
    "ml.p5en.48xlarge": 8, "ml.g5.xlarge": 1, "ml.g5.2xlarge": 1, "ml.g5.4xlarge": 1,
    "ml.g5.8xlarge": 1, "ml.g5.12xlarge": 4, "ml.g5.16xlarge": 1, "ml.g5.24xlarge": 4,
    "ml.g5.48xlarge": 8, "ml.g6.12xlarge": 4, "ml.g6.48xlarge": 8, "ml.g6e.12xlarge": 4,
    "ml.g6e.48xlarge": 8,
}

_NUM = r"([0-9.eE+-]+)"
# Regexes over the trainers' log lines, e.g.
#   train step 100 loss 7.91 mlm_loss 7.2 mlm_acc 0.048 sop_loss 0.69 ... seq_per_sec 133.5
#   val step 100 loss 7.9 mlm_loss 7.21 mlm_acc 0.051 sop_loss 0.69 sop_acc 0.51
#   eval step 213 exact 63.33 f1 72.61 total 300 HasAns_exact ... best_f1 72.85 ...
METRIC_DEFINITIONS = [
    {"Name": "train:loss", "Regex": rf"train step \d+ loss {_NUM}"},
    {"Name": "train:mlm_acc", "Regex": rf"train step \d+ .*? mlm_acc {_NUM}"},
    {"Name": "train:sop_acc", "Regex": rf"train step \d+ .*? sop_acc {_NUM}"},
    {"Name": "train:learning_rate", "Regex": rf"train step \d+ .*? learning_rate {_NUM}"},
    {"Name": "train:seq_per_sec", "Regex": rf"train step \d+ .*? seq_per_sec {_NUM}"},
    {"Name": "val:loss", "Regex": rf"val step \d+ loss {_NUM}"},
    {"Name": "val:mlm_acc", "Regex": rf"val step \d+ .*? mlm_acc {_NUM}"},
    {"Name": "val:sop_acc", "Regex": rf"val step \d+ .*? sop_acc {_NUM}"},
    {"Name": "squad:exact", "Regex": rf"eval step \d+ exact(?:_match)? {_NUM}"},
    {"Name": "squad:f1", "Regex": rf"eval step \d+ exact(?:_match)? \S+ f1 {_NUM}"},
]

# (flag, environment variable) for every value a job needs; env names as aws-samples'.
REQUIRED = {
    "role": "SAGEMAKER_ROLE",
    "image_name": "SAGEMAKER_IMAGE_NAME",
    "fsx_id": "SAGEMAKER_FSX_ID",
    "fsx_mount_name": "SAGEMAKER_FSX_MOUNT_NAME",
    "subnet_ids": "SAGEMAKER_SUBNET_IDS",
    "security_group_ids": "SAGEMAKER_SECURITY_GROUP_IDS",
    "output_s3_uri": "SAGEMAKER_OUTPUT_S3_URI",
}


class LaunchError(ValueError):
    pass


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--entry_point", required=True,
                   help="run_pretraining or run_squad (albert/run_pretraining.py works too)")
    p.add_argument("--sm_job_name", default="albert", help="job name prefix; a timestamp is added")
    p.add_argument("--source_dir", default=None,
                   help="upload this checkout and run it instead of the code in the image")
    p.add_argument("--instance_type", default=os.environ.get("SAGEMAKER_INSTANCE_TYPE",
                                                             "ml.p4d.24xlarge"))
    p.add_argument("--instance_count", type=int, default=1)
    p.add_argument("--processes_per_host", type=int, default=None,
                   help="default: the instance type's GPU count")
    for name, env in REQUIRED.items():
        p.add_argument(f"--{name}", default=None, help=f"default: ${env}")
    p.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION"))
    p.add_argument("--use_spot", action="store_true", help="managed spot training")
    p.add_argument("--max_wait", type=int, default=None,
                   help="seconds to wait for spot capacity plus training (with --use_spot)")
    p.add_argument("--max_run", type=int, default=5 * 24 * 3600, help="seconds")
    p.add_argument("--checkpoint_s3_uri", default=None,
                   help="S3 prefix synced with the job's checkpoint dir (spot resume)")
    p.add_argument("--volume_size", type=int, default=200, help="GB of EBS per instance")
    p.add_argument("--endpoint_url", default=None, help="SageMaker API endpoint (testing)")
    p.add_argument("--dry_run", action="store_true", help="print the request; submit nothing")
    args, passthrough = p.parse_known_args(argv)
    return args, passthrough


def _fill_from_env(args) -> None:
    missing = []
    for name, env in REQUIRED.items():
        if not getattr(args, name):
            setattr(args, name, os.environ.get(env) or None)
        if not getattr(args, name):
            missing.append(f"--{name} (or ${env})")
    if missing:
        raise LaunchError("missing required values:\n  " + "\n  ".join(missing))


def _entry_point(value: str) -> str:
    name = os.path.splitext(os.path.basename(value))[0]
    if name not in ENTRY_POINTS:
        raise LaunchError(f"--entry_point must be one of {ENTRY_POINTS}, got {value!r}")
    return name


def hyperparameters(passthrough: list[str], use_checkpoint_dir: bool) -> dict[str, str]:
    """Unknown flags -> SageMaker hyperparameters (strings). A flag without a value becomes
    "True", which the container's entry script turns back into a bare flag."""
    hp: dict[str, str] = {}
    i = 0
    while i < len(passthrough):
        item = passthrough[i]
        if not item.startswith("--"):
            raise LaunchError(f"unexpected argument {item!r}: training flags are --name value")
        key, value = item[2:], None
        if "=" in key:
            key, value = key.split("=", 1)
        else:
            values = []
            while i + 1 < len(passthrough) and not passthrough[i + 1].startswith("--"):
                values.append(passthrough[i + 1])
                i += 1
            value = " ".join(values) if values else "True"
        hp[key] = value
        i += 1
    if "filesystem_prefix" in hp:
        raise LaunchError("--filesystem_prefix is set by the launcher to the FSx channel "
                          f"({CHANNEL_PATH}); give data paths relative to the file system root")
    hp["filesystem_prefix"] = CHANNEL_PATH
    if use_checkpoint_dir:
        hp.setdefault("checkpoint_dir", CHECKPOINT_LOCAL_PATH)
    return hp


def job_name(prefix: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    clean = re.sub(r"[^a-zA-Z0-9-]", "-", prefix).strip("-") or "albert"
    return f"{clean[:63 - len(stamp) - 1]}-{stamp}"


def build_request(args, passthrough, name: str, submit_dir: str | None = None) -> dict:
    _fill_from_env(args)
    entry = _entry_point(args.entry_point)
    if args.instance_count < 1:
        raise LaunchError("--instance_count must be at least 1")
    per_host = args.processes_per_host or GPUS_PER_INSTANCE.get(args.instance_type)
    if per_host is None:
        raise LaunchError(f"unknown GPU count for {args.instance_type}: pass "
                          "--processes_per_host")
    if args.max_wait is not None and not args.use_spot:
        raise LaunchError("--max_wait only applies with --use_spot")
    hp = hyperparameters(passthrough, use_checkpoint_dir=bool(args.checkpoint_s3_uri))
    hp.update({
        "sagemaker_program": f"{entry}.py",
        "sagemaker_submit_directory": submit_dir or IMAGE_CODE_DIR,
        "sagemaker_mpi_enabled": "true",
        "sagemaker_mpi_num_of_processes_per_host": str(per_host),
        "sagemaker_mpi_custom_mpi_options":
            "-x NCCL_DEBUG=WARN -x HOROVOD_CYCLE_TIME=0.1 -x TF_CPP_MIN_LOG_LEVEL=2",
    })
    stopping = {"MaxRuntimeInSeconds": args.max_run}
    request = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {
            "TrainingImage": args.image_name,
            "TrainingInputMode": "File",
            "MetricDefinitions": METRIC_DEFINITIONS,
            "EnableSageMakerMetricsTimeSeries": True,
        },
        "RoleArn": args.role,
        "HyperParameters": hp,
        "InputDataConfig": [{
            "ChannelName": CHANNEL,
            "DataSource": {"FileSystemDataSource": {
                "FileSystemId": args.fsx_id,
                "FileSystemAccessMode": "rw",  # checkpoints and logs may live on FSx too
                "FileSystemType": "FSxLustre",
                "DirectoryPath": f"/{args.fsx_mount_name.strip('/')}",
            }},
        }],
        "OutputDataConfig": {"S3OutputPath": args.output_s3_uri},
        "ResourceConfig": {"InstanceType": args.instance_type,
                           "InstanceCount": args.instance_count,
                           "VolumeSizeInGB": args.volume_size},
        "VpcConfig": {"SecurityGroupIds": _split(args.security_group_ids),
                      "Subnets": _split(args.subnet_ids)},
        "StoppingCondition": stopping,
        "EnableNetworkIsolation": False,
        "Tags": [{"Key": "project", "Value": "albert-tf"}],
    }
    if args.use_spot:
        request["EnableManagedSpotTraining"] = True
        stopping["MaxWaitTimeInSeconds"] = args.max_wait or args.max_run * 2
        if stopping["MaxWaitTimeInSeconds"] < args.max_run:
            raise LaunchError("--max_wait must be at least --max_run")
        if not args.checkpoint_s3_uri:
            raise LaunchError("--use_spot needs --checkpoint_s3_uri so an interrupted job "
                              "resumes from its last checkpoint")
    if args.checkpoint_s3_uri:
        request["CheckpointConfig"] = {"S3Uri": args.checkpoint_s3_uri,
                                       "LocalPath": CHECKPOINT_LOCAL_PATH}
    return request


def _split(value: str) -> list[str]:
    return [v for v in value.replace(" ", "").split(",") if v]


def upload_source(source_dir: str, s3_prefix: str, session, endpoint_url=None) -> str:
    """tar.gz the checkout (what the SageMaker toolkit expects) and upload it; return its URI."""
    match = re.match(r"s3://([^/]+)/?(.*)", s3_prefix)
    if not match:
        raise LaunchError(f"--output_s3_uri must look like s3://bucket/prefix, got {s3_prefix!r}")
    bucket, key_prefix = match.group(1), match.group(2).rstrip("/")
    skip = {".git", ".venv", "runs", "demo_output", "__pycache__", ".pytest_cache"}
    with tempfile.TemporaryDirectory() as tmp:
        archive = os.path.join(tmp, "sourcedir.tar.gz")
        with tarfile.open(archive, "w:gz") as tar:
            for root, dirs, files in os.walk(source_dir):
                dirs[:] = [d for d in dirs if d not in skip]
                for f in files:
                    path = os.path.join(root, f)
                    tar.add(path, arcname=os.path.relpath(path, source_dir))
        key = f"{key_prefix}/source/{int(time.time())}/sourcedir.tar.gz".lstrip("/")
        session.client("s3", endpoint_url=endpoint_url).upload_file(archive, bucket, key)
    return f"s3://{bucket}/{key}"


def main(argv=None) -> int:
    args, passthrough = parse_args(argv)
    try:
        name = job_name(args.sm_job_name)
        submit_dir = None
        if args.source_dir and not args.dry_run:
            import boto3

            _fill_from_env(args)
            session = boto3.Session(region_name=args.region)
            if not os.path.isdir(args.source_dir):
                raise LaunchError(f"--source_dir {args.source_dir} is not a directory")
            submit_dir = upload_source(args.source_dir, args.output_s3_uri, session,
                                       args.endpoint_url)
        elif args.source_dir:
            submit_dir = f"{args.output_s3_uri or 's3://<output>'}/source/<upload>/sourcedir.tar.gz"
        request = build_request(args, passthrough, name, submit_dir)
    except LaunchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(json.dumps(request, indent=2))
        return 0
    import boto3

    client = boto3.Session(region_name=args.region).client("sagemaker",
                                                           endpoint_url=args.endpoint_url)
    client.create_training_job(**request)
    region = client.meta.region_name
    print(f"submitted training job {name}\n"
          f"  status: aws sagemaker describe-training-job --region {region} "
          f"--training-job-name {name} --query TrainingJobStatus\n"
          f"  logs:   aws logs tail /aws/sagemaker/TrainingJobs --region {region} "
          f"--log-stream-name-prefix {name} --follow\n"
          f"  console: https://{region}.console.aws.amazon.com/sagemaker/home?region={region}"
          f"#/jobs/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
