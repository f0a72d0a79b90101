"""Launch run_pretraining, run_squad or run_classifier as an Amazon SageMaker training job reading
FSx for Lustre.

    export SAGEMAKER_ROLE=arn:aws:iam::123456789012:role/SageMakerRole
    export SAGEMAKER_IMAGE_NAME=123456789012.dkr.ecr.us-east-1.amazonaws.com/albert-tf:latest
    export SAGEMAKER_FSX_ID=fs-0123456789abcdef0 SAGEMAKER_FSX_MOUNT_NAME=abcdefgh
    export SAGEMAKER_SUBNET_IDS=subnet-0123 SAGEMAKER_SECURITY_GROUP_IDS=sg-0123
    export SAGEMAKER_OUTPUT_S3_URI=s3://my-bucket/albert/output
    python scripts/launch_sagemaker.py --entry_point run_pretraining --sm_job_name albert-base \\
        --instance_type ml.p4d.24xlarge --instance_count 2 --dry_run \\
        --train_dir albert/train --val_dir albert/validation --model_size base \\
        --per_gpu_batch_size 32 --total_steps 125000 --warmup_steps 3125 --precision bf16

Every other flag is passed to the training script as a hyperparameter (after a `--`, every
argument is), and --filesystem_prefix points at the FSx channel inside the container. Those
flags are checked first with the entry point's own parser from this checkout (as the container
will parse them), so a misspelt flag, a bad value or a missing --total_steps stops here instead
of in a paid job. The launcher's own flags may be spelt with hyphens too (--dry-run). --dry_run
prints the CreateTrainingJob request as JSON and submits nothing.

What the job writes goes where SageMaker keeps it (albert.sagemaker_entry): outputs left out to
/opt/ml/model, uploaded to <output_s3_uri>/<job>/output/model.tar.gz when the job ends (with
--checkpoint_s3_uri the checkpoints and final/ to /opt/ml/checkpoints, synced with it). An
output path given relative lies under /opt/ml/model too, which the launcher says; an absolute
one on the FSx channel (/opt/ml/input/data/fsx/...) stays on the file system. One the job would
lose (../x, which climbs out of /opt/ml/model, or a URL such as s3://...) is refused here, and by
the entry script in a job started another way.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import re
import shlex
import sys
import tarfile
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHANNEL = "fsx"
CHANNEL_PATH = f"/opt/ml/input/data/{CHANNEL}"
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
MODEL_DIR = "/opt/ml/model"  # SM_MODEL_DIR in the container: uploaded when the job ends
OUTPUT_KEYS = ("output_dir", "checkpoint_dir", "log_dir", "cache_dir", "export_dir")
IMAGE_CODE_DIR = "/opt/albert/docker/sagemaker"  # entry scripts baked into docker/Dockerfile
ENTRY_POINTS = ("run_pretraining", "run_squad", "run_classifier")

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


def metric_regex(prefix: str, name: str) -> str:
    """A regex over the trainers' log lines (albert.train.run_logging: "<prefix> step <n>" then
    "<key> <value>" pairs, e.g. "val step 100 loss 7.9 mlm_loss 7.21 mlm_acc 0.051") whose group
    is the value of `name`, wherever it stands among the pairs: whole pairs are skipped, so "loss"
    never reads mlm_loss's value nor loss_scale's, and "val" never reads an "eval" line. (Horovod
    may start a line with its rank: "[1,0]<stdout>:train step ...".)"""
    return rf"(?:^|\W){re.escape(prefix)} step \d+(?: \S+ \S+)*? {re.escape(name)} {_NUM}"


def metric_definitions(task) -> list[dict]:
    """SageMaker's MetricDefinitions for a job running `task` (an albert.tasks Task class): one
    "<prefix>:<metric>" per metric its log lines carry (Task.logged)."""
    return [{"Name": f"{prefix}:{name}", "Regex": metric_regex(prefix, name)}
            for prefix, names in task.logged.items() for name in names]


def entry_task(entry: str):
    """The Task class the entry point runs: the one its module imports."""
    module = _entry_module(entry)
    base = _entry_module("tasks").Task
    found = {v for v in vars(module).values()
             if isinstance(v, type) and issubclass(v, base) and v is not base}
    if len(found) != 1:
        raise LaunchError(f"albert.{entry} runs {len(found)} task classes, expected one")
    return found.pop()


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


LIST_VALUES = ("subnet_ids", "security_group_ids")
ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+")
S3_URI = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?")


class LaunchError(ValueError):
    pass


def _add(p, name: str, **kw):
    """A launcher flag under both spellings: --name_with_underscores and --name-with-hyphens."""
    spellings = [f"--{name}"] + ([f"--{name.replace('_', '-')}"] if "_" in name else [])
    p.add_argument(*spellings, dest=name, **kw)


def _parser() -> argparse.ArgumentParser:
    # No abbreviations: a prefix of a launcher flag must not swallow a trainer flag (or the
    # reverse); near misses are caught by check_trainer_flags instead.
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    _add(p, "entry_point", required=True,
         help="run_pretraining, run_squad or run_classifier (albert/run_pretraining.py "
              "works too)")
    _add(p, "sm_job_name", default="albert", help="job name prefix; a timestamp is added")
    _add(p, "source_dir", default=None,
         help="upload this checkout and run it instead of the code in the image")
    _add(p, "instance_type", default=os.environ.get("SAGEMAKER_INSTANCE_TYPE", "ml.p4d.24xlarge"))
    _add(p, "instance_count", type=int, default=1)
    _add(p, "processes_per_host", type=int, default=None,
         help="default: the instance type's GPU count")
    for name, env in REQUIRED.items():
        if name in LIST_VALUES:
            _add(p, name, nargs="+", default=None,
                 help=f"space- or comma-separated; default: ${env}")
        else:
            _add(p, name, default=None, help=f"default: ${env}")
    _add(p, "region", default=os.environ.get("AWS_DEFAULT_REGION"))
    _add(p, "use_spot", action="store_true", help="managed spot training")
    _add(p, "max_wait", type=int, default=None,
         help="seconds to wait for spot capacity plus training (with --use_spot)")
    _add(p, "max_run", type=int, default=5 * 24 * 3600, help="seconds")
    _add(p, "checkpoint_s3_uri", default=None,
         help="S3 prefix synced with the job's checkpoint dir (spot resume)")
    _add(p, "volume_size", type=int, default=200, help="GB of EBS per instance")
    _add(p, "endpoint_url", default=None, help="SageMaker API endpoint (testing)")
    _add(p, "dry_run", action="store_true", help="print the request; submit nothing")
    return p


def launcher_flags() -> list[str]:
    """Every spelling of every launcher flag (for near-miss detection)."""
    return sorted(set(re.findall(r"--[A-Za-z][\w-]*", _parser().format_help())))


def parse_args(argv=None):
    """(the launcher's flags, the trainer's). After a `--` every argument is the trainer's, as a
    command that runs another one reads it; before it, what the launcher does not take."""
    argv = sys.argv[1:] if argv is None else list(argv)
    trainer = []
    if "--" in argv:
        at = argv.index("--")
        argv, trainer = argv[:at], argv[at + 1:]
    p = _parser()
    args, passthrough = p.parse_known_args(argv)
    passthrough += trainer
    for name in LIST_VALUES:
        if getattr(args, name) is not None:
            setattr(args, name, " ".join(getattr(args, name)))
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


def _entry_module(entry: str):
    """albert.<entry> from the installed package, else from this checkout's models/."""
    try:
        return importlib.import_module(f"albert.{entry}")
    except ModuleNotFoundError as e:
        if e.name != "albert":
            raise
    sys.path.insert(0, os.path.join(REPO_ROOT, "models"))
    return importlib.import_module(f"albert.{entry}")


def check_trainer_flags(entry: str, hp: dict[str, str], bare: set[str] = frozenset()) -> None:
    """Parse the hyperparameters as the container will (sagemaker_entry.normalize, then the
    entry point's parse_args) and turn any parser error into a LaunchError; an unknown flag
    gets the nearest launcher or trainer flag as a suggestion. `bare`: the keys given without
    a value, which only a boolean flag of the entry point may be."""
    try:
        module = _entry_module(entry)
        sagemaker_entry = _entry_module("sagemaker_entry")
    except ImportError as e:
        # Without the trainer's parser, still refuse what looks like a launcher flag.
        named = (_unknown(f"--{key}", []) for key in hp
                 if key not in ("filesystem_prefix", "checkpoint_dir"))
        misses = [miss for miss in named if "(" in miss]  # the rest may be the trainer's
        if misses:
            raise LaunchError(f"unknown flag(s) {', '.join(misses)}: misplaced or misspelt "
                              "launcher flags; nothing submitted") from None
        print(f"warning: cannot load albert.{entry} to check the training flags ({e}); "
              "passing them unchecked", file=sys.stderr)
        return
    parser = module.build_parser()
    for key in sorted(bare):
        if f"--{key}" in _needs_value(parser):
            raise LaunchError(f"--{key} needs a value ({entry} takes --{key} VALUE); nothing "
                              "submitted")
    # As the container's entry script turns them into the trainer's command line, outputs in
    # the job's model directory included.
    try:
        argv = sagemaker_entry.container_argv(
            [item for key, value in hp.items() for item in (f"--{key}", value)], module,
            {"SM_MODEL_DIR": MODEL_DIR})
    except ValueError as e:  # FlagError: an output the job would lose (a URL, a ../ path)
        raise LaunchError(f"{e}; nothing submitted") from None
    parser.exit_on_error = False  # its errors as FlagError (albert.cli.flags.Parser), not exit 2
    try:
        args = module.parse_args(argv, parser)
    except ValueError as e:  # FlagError: a flag the parser refuses, or a combination
        raise _refused(entry, parser, str(e)) from None
    # The runners' own checks of counts and frequencies (--total_steps 0 ...), where present.
    check = getattr(_entry_module("cli.resolve"), "check_training_flags", None)
    if check is not None:
        try:
            check(args)
        except ValueError as e:
            raise LaunchError(f"{entry} would refuse these flags: {e}") from None


def _refused(entry: str, parser, message: str) -> LaunchError:
    """What the launcher says of flags `entry`'s parser refused with `message`: an unknown flag
    with the nearest launcher or trainer flag as a suggestion, anything else as it is."""
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return LaunchError(f"{entry} would refuse these flags: {message}")
    known = sorted(set(re.findall(r"--[A-Za-z][\w-]*", parser.format_help())))
    problems = [_unknown(flag, known) for flag in message[len(prefix):].split()
                if flag.startswith("--")]
    if not problems:
        return LaunchError(f"{entry} would refuse these arguments: {message[len(prefix):]}")
    return LaunchError(f"unknown flag(s) {', '.join(problems)}: neither a launcher flag nor one "
                       f"that {entry} accepts, so the job would fail; nothing submitted")


def _unknown(flag: str, known: list[str]) -> str:
    """`flag`, which the trainer refused, with the nearest launcher or trainer (`known`) flag as
    a suggestion: never itself. A launcher flag given among the trainer's (after `--`) is
    said to be one."""
    if flag in launcher_flags():
        return f"{flag} (the launcher's flag: give it before --)"
    near = difflib.get_close_matches(flag, [f for f in launcher_flags() + known if f != flag],
                                     n=1, cutoff=0.75)
    return f"{flag} (did you mean {near[0]}?)" if near else flag


def _needs_value(parser) -> set[str]:
    """The option strings of `parser` that cannot stand without a value (an old spelling too:
    albert.cli.flags.Renamed)."""
    return {option for option, action in parser.option_actions().items()
            if action.nargs not in (0, "?", "*")}


def _check_values(args) -> None:
    """Numbers and AWS identifiers that cannot work, before anything is sent."""
    for name in ("instance_count", "processes_per_host", "max_run", "max_wait", "volume_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise LaunchError(f"--{name} must be at least 1, got {value}")
    if not ROLE_ARN.fullmatch(args.role):
        raise LaunchError(f"--role must be an IAM role ARN like "
                          f"arn:aws:iam::123456789012:role/SageMakerRole, got {args.role!r}")
    for name in ("output_s3_uri", "checkpoint_s3_uri"):
        value = getattr(args, name)
        if value is not None and not S3_URI.fullmatch(value):
            raise LaunchError(f"--{name} must look like s3://bucket/prefix (a bucket name of "
                              f"3-63 lowercase letters, digits, dots, hyphens), got {value!r}")
    for name in LIST_VALUES:
        if not _split(getattr(args, name)):
            raise LaunchError(f"--{name} holds no ids: {getattr(args, name)!r}")


def _entry_point(value: str) -> str:
    name = os.path.splitext(os.path.basename(value))[0]
    if name not in ENTRY_POINTS:
        raise LaunchError(f"--entry_point must be one of {ENTRY_POINTS}, got {value!r}")
    return name


def _trainer_parser(entry: str):
    """The entry point's parser, or None where it cannot be loaded here (check_trainer_flags
    says so)."""
    try:
        return _entry_module(entry).build_parser()
    except ImportError:
        return None


def hyperparameters(passthrough: list[str], use_checkpoint_dir: bool,
                    bare: set[str] | None = None, parser=None) -> dict[str, str]:
    """Unknown flags -> SageMaker hyperparameters (strings), encoded as the container's entry
    script decodes them (albert.cli.hyperparameters.encode), with the FSx channel as
    --filesystem_prefix and, with --checkpoint_s3_uri, the synced checkpoint directory. The
    keys given without a value are added to `bare` (only a boolean flag may be one). With the
    entry point's `parser`, values the entry script could not give back as they were are
    refused."""
    try:
        hp, given_bare = _entry_module("cli.hyperparameters").encode(passthrough, parser)
    except ValueError as e:  # FlagError: not a --name value command line
        raise LaunchError(str(e)) from None
    if bare is not None:
        bare |= given_bare
    if "filesystem_prefix" in hp:
        raise LaunchError("--filesystem_prefix is set by the launcher to the FSx channel "
                          f"({CHANNEL_PATH}); give data paths relative to the file system root")
    hp["filesystem_prefix"] = CHANNEL_PATH
    if use_checkpoint_dir:
        if "checkpoint_dir" not in hp and _true(hp.get("overwrite_output_dir")) \
                and not _true(hp.get("overwrite_checkpoint_dir")):
            raise LaunchError(
                "--overwrite_output_dir discards the run under --output_dir, but with "
                f"--checkpoint_s3_uri the job's checkpoints are in {CHECKPOINT_LOCAL_PATH} "
                "(synced with that prefix), which it keeps: to start afresh give a "
                "--checkpoint_s3_uri that holds no run, or add --overwrite_checkpoint_dir to "
                "discard them at every start of the job (a spot restart too)")
        hp.setdefault("checkpoint_dir", CHECKPOINT_LOCAL_PATH)
    return hp


def _true(value: str | None) -> bool:
    return value in ("True", "true")


def refuse_lost_outputs(hp: dict[str, str]) -> None:
    """An output path the job would lose (one that climbs out of the job's model directory, a
    URL such as s3://... where a local path belongs) refused as the container's entry script
    refuses it (albert.sagemaker_entry.job_path), with the FSx channel named as the way on.
    Needs no trainer, so it holds where the entry point cannot be loaded here."""
    job_path = _entry_module("sagemaker_entry").job_path
    for key in OUTPUT_KEYS:
        if hp.get(key):
            try:
                job_path(f"--{key}", hp[key], MODEL_DIR, CHANNEL_PATH)
            except ValueError as e:  # FlagError
                raise LaunchError(f"{e}; nothing submitted") from None


def check_output_paths(hp: dict[str, str], output_s3_uri: str, name: str) -> None:
    """A relative output path would be under the image's working directory, lost with the
    container; the entry script puts it under the job's model directory (uploaded when the job
    ends): say so (refuse_lost_outputs has refused what it cannot keep)."""
    for key in OUTPUT_KEYS:
        value = hp.get(key)
        if not value or os.path.isabs(value):
            continue
        print(f"warning: --{key} {value} is relative: the job writes it to "
              f"{os.path.join(MODEL_DIR, value)}, uploaded in "
              f"{output_s3_uri.rstrip('/')}/{name}/output/model.tar.gz when the job ends; to "
              f"keep it on FSx give {os.path.join(CHANNEL_PATH, value)}", file=sys.stderr)


def job_name(prefix: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    clean = re.sub(r"[^a-zA-Z0-9-]", "-", prefix).strip("-") or "albert"
    return f"{clean[:63 - len(stamp) - 1]}-{stamp}"


def build_request(args, passthrough, name: str, submit_dir: str | None = None) -> dict:
    _fill_from_env(args)
    entry = _entry_point(args.entry_point)
    _check_values(args)
    per_host = args.processes_per_host
    if per_host is None:
        per_host = GPUS_PER_INSTANCE.get(args.instance_type)
    if per_host is None:
        raise LaunchError(f"unknown GPU count for {args.instance_type}: pass "
                          "--processes_per_host")
    if args.max_wait is not None and not args.use_spot:
        raise LaunchError("--max_wait only applies with --use_spot")
    bare: set[str] = set()
    hp = hyperparameters(passthrough, use_checkpoint_dir=bool(args.checkpoint_s3_uri), bare=bare,
                         parser=_trainer_parser(entry))
    refuse_lost_outputs(hp)
    check_trainer_flags(entry, hp, bare)
    try:
        metrics = metric_definitions(entry_task(entry))
    except ImportError as e:
        print(f"warning: cannot load albert.{entry} to read its metrics ({e}); the job will have "
              "no metric definitions", file=sys.stderr)
        metrics = []
    check_output_paths(hp, args.output_s3_uri, name)
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
            "MetricDefinitions": metrics,
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
    """"subnet-a,subnet-b", "subnet-a subnet-b" or a mix -> ["subnet-a", "subnet-b"]."""
    return [v for v in re.split(r"[\s,]+", value) if v]


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


def _aws_errors():
    """The exception types boto3/botocore raise for a refused or failed call."""
    import boto3.exceptions
    import botocore.exceptions

    return (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError,
            boto3.exceptions.Boto3Error)


def main(argv=None) -> int:
    args, passthrough = parse_args(argv)
    try:
        name = job_name(args.sm_job_name)
        submit_dir = None
        if args.source_dir:
            _fill_from_env(args)
            if not args.dry_run and not os.path.isdir(args.source_dir):
                raise LaunchError(f"--source_dir {args.source_dir} is not a directory")
            submit_dir = f"{args.output_s3_uri}/source/<upload>/sourcedir.tar.gz"
        # Everything is checked here, before anything is uploaded or submitted.
        request = build_request(args, passthrough, name, submit_dir)
    except LaunchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(json.dumps(request, indent=2))
        return 0
    try:
        aws_errors = _aws_errors()
    except ImportError as e:
        print(f"error: submitting needs boto3 ({e}): pip install boto3, or use --dry_run",
              file=sys.stderr)
        return 2
    try:
        region = submit(args, request)
    except LaunchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except aws_errors as e:
        message = " ".join(str(e).split())
        print(f"error: the AWS call failed ({type(e).__name__}): {message}", file=sys.stderr)
        return 2
    q_region, q_name = shlex.quote(region), shlex.quote(name)  # hints to paste into a shell
    print(f"submitted training job {name}\n"
          f"  status: aws sagemaker describe-training-job --region {q_region} "
          f"--training-job-name {q_name} --query TrainingJobStatus\n"
          f"  logs:   aws logs tail /aws/sagemaker/TrainingJobs --region {q_region} "
          f"--log-stream-name-prefix {q_name} --follow\n"
          f"  console: https://{region}.console.aws.amazon.com/sagemaker/home?region={region}"
          f"#/jobs/{name}")
    return 0


def submit(args, request: dict) -> str:
    """Upload --source_dir (when given) and create the training job; returns the region."""
    import boto3

    session = boto3.Session(region_name=args.region)
    if args.source_dir:
        uri = upload_source(args.source_dir, args.output_s3_uri, session, args.endpoint_url)
        request["HyperParameters"]["sagemaker_submit_directory"] = uri
    client = session.client("sagemaker", endpoint_url=args.endpoint_url)
    client.create_training_job(**request)
    return client.meta.region_name


if __name__ == "__main__":
    sys.exit(main())
