"""The cloud path: the SageMaker request (botocore model, a real moto server on 127.0.0.1, metric
regexes against real log lines), the training image (hadolint) and the templates (cfn-lint)."""

import importlib.util
import json
import os
import re
import subprocess
import sys

import boto3
import botocore.session
import pytest
from botocore.validate import ParamValidator
from helpers import PREDS, REPO_ROOT, SEQ, run_in_process

from albert.cli.hyperparameters import boolean_flags, decode

BIN = os.path.dirname(sys.executable)
LAUNCHER = os.path.join(REPO_ROOT, "scripts", "launch_sagemaker.py")


def load_launcher():
    spec = importlib.util.spec_from_file_location("launch_sagemaker", LAUNCHER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


JOB = ["--entry_point", "run_pretraining", "--sm_job_name", "albert-base",
       "--role", "arn:aws:iam::123456789012:role/SageMakerRole",
       "--image_name", "123456789012.dkr.ecr.us-east-1.amazonaws.com/albert-tf:1",
       "--fsx_id", "fs-0123456789abcdef0", "--fsx_mount_name", "abcdefgh",
       "--subnet_ids", "subnet-0123,subnet-4567", "--security_group_ids", "sg-0123",
       "--output_s3_uri", "s3://bucket/albert/output",
       "--instance_type", "ml.p4d.24xlarge", "--instance_count", "2",
       "--use_spot", "--checkpoint_s3_uri", "s3://bucket/albert/checkpoints",
       # passed through to run_pretraining:
       "--train_dir", "albert/train", "--model_size", "base", "--skip_xla", "--total_steps", "100",
       "--config_override", "hidden_dropout_prob=0.1", "num_hidden_layers=6"]


@pytest.fixture
def request_dict():
    ls = load_launcher()
    args, rest = ls.parse_args(JOB)
    return ls.build_request(args, rest, ls.job_name(args.sm_job_name))


def test_request_content(request_dict):
    r = request_dict
    assert re.fullmatch(r"albert-base-\d{8}-\d{6}", r["TrainingJobName"])
    fsx = r["InputDataConfig"][0]["DataSource"]["FileSystemDataSource"]
    assert fsx == {"FileSystemId": "fs-0123456789abcdef0", "FileSystemAccessMode": "rw",
                   "FileSystemType": "FSxLustre", "DirectoryPath": "/abcdefgh"}
    hp = r["HyperParameters"]
    assert hp["filesystem_prefix"] == "/opt/ml/input/data/fsx"
    assert hp["train_dir"] == "albert/train" and hp["skip_xla"] == "True"
    assert hp["checkpoint_dir"] == "/opt/ml/checkpoints"  # synced to S3: spot jobs resume
    assert hp["sagemaker_mpi_num_of_processes_per_host"] == "8"  # p4d: 8 GPUs
    assert r["VpcConfig"] == {"SecurityGroupIds": ["sg-0123"],
                              "Subnets": ["subnet-0123", "subnet-4567"]}
    assert r["EnableManagedSpotTraining"] is True
    assert r["StoppingCondition"]["MaxWaitTimeInSeconds"] >= r["StoppingCondition"][
        "MaxRuntimeInSeconds"]
    assert r["CheckpointConfig"]["LocalPath"] == "/opt/ml/checkpoints"


def test_request_passes_botocore_validation(request_dict):
    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model("CreateTrainingJob").input_shape
    report = ParamValidator().validate(request_dict, shape)
    assert not report.has_errors(), report.generate_report()


def test_moto_server_accepts_and_reads_back(request_dict, monkeypatch, tmp_path):
    from moto.server import ThreadedMotoServer

    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        # Through the launcher's own submit path (a real HTTP request from boto3).
        ls = load_launcher()
        assert ls.main(JOB + ["--endpoint_url", endpoint, "--region", "us-east-1"]) == 0
        client = boto3.client("sagemaker", endpoint_url=endpoint, region_name="us-east-1")
        names = [j["TrainingJobName"] for j in client.list_training_jobs()["TrainingJobSummaries"]]
        assert len(names) == 1 and names[0].startswith("albert-base-")
        job = client.describe_training_job(TrainingJobName=names[0])
        expected = request_dict
        assert job["InputDataConfig"] == expected["InputDataConfig"]
        assert job["VpcConfig"] == expected["VpcConfig"]
        assert job["CheckpointConfig"] == expected["CheckpointConfig"]
        assert job["ResourceConfig"] == expected["ResourceConfig"]
        assert job["HyperParameters"] == expected["HyperParameters"]
        assert job["EnableManagedSpotTraining"] is True
        assert job["RoleArn"] == expected["RoleArn"]

        # --source_dir: the checkout is uploaded as the toolkit's sourcedir.tar.gz and used.
        import tarfile

        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        s3.create_bucket(Bucket="bucket")
        assert ls.main(JOB + ["--endpoint_url", endpoint, "--region", "us-east-1",
                              "--sm_job_name", "with-source", "--source_dir",
                              os.path.join(REPO_ROOT, "docker")]) == 0
        job = [j for j in client.list_training_jobs()["TrainingJobSummaries"]
               if j["TrainingJobName"].startswith("with-source")][0]
        hp = client.describe_training_job(TrainingJobName=job["TrainingJobName"])[
            "HyperParameters"]
        uri = hp["sagemaker_submit_directory"]
        assert uri.startswith("s3://bucket/albert/output/source/")
        key = uri[len("s3://bucket/"):]
        archive = os.path.join(str(tmp_path), "src.tar.gz")
        s3.download_file("bucket", key, archive)
        with tarfile.open(archive) as tar:
            assert "sagemaker/run_pretraining.py" in tar.getnames()
    finally:
        server.stop()


@pytest.mark.e2e
def test_missing_values_listed_together(monkeypatch):
    """The shipped script run as a user runs it, its settings from the user's environment
    ($SAGEMAKER_*) as a fresh process reads them: a process by nature."""
    for env in ("SAGEMAKER_ROLE", "SAGEMAKER_IMAGE_NAME", "SAGEMAKER_FSX_ID",
                "SAGEMAKER_FSX_MOUNT_NAME", "SAGEMAKER_SUBNET_IDS",
                "SAGEMAKER_SECURITY_GROUP_IDS", "SAGEMAKER_OUTPUT_S3_URI"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("SAGEMAKER_FSX_ID", "fs-0123456789abcdef0")
    proc = subprocess.run([sys.executable, LAUNCHER, "--entry_point", "run_squad", "--dry_run"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    for expected in ("--role (or $SAGEMAKER_ROLE)", "--image_name (or $SAGEMAKER_IMAGE_NAME)",
                     "--subnet_ids (or $SAGEMAKER_SUBNET_IDS)",
                     "--output_s3_uri (or $SAGEMAKER_OUTPUT_S3_URI)"):
        assert expected in proc.stderr
    assert "--fsx_id" not in proc.stderr  # taken from the environment


@pytest.mark.e2e
def test_dry_run_prints_json_from_env(monkeypatch):
    """The shipped script in a fresh process with the user's environment ($SAGEMAKER_*)."""
    env = {**os.environ, "SAGEMAKER_ROLE": "arn:aws:iam::123456789012:role/R",
           "SAGEMAKER_IMAGE_NAME": "img:1", "SAGEMAKER_FSX_ID": "fs-0123456789abcdef0",
           "SAGEMAKER_FSX_MOUNT_NAME": "mnt", "SAGEMAKER_SUBNET_IDS": "subnet-1",
           "SAGEMAKER_SECURITY_GROUP_IDS": "sg-1", "SAGEMAKER_OUTPUT_S3_URI": "s3://bkt/o"}
    proc = subprocess.run([sys.executable, LAUNCHER, "--entry_point", "albert/run_squad.py",
                           "--instance_type", "ml.g5.12xlarge", "--dry_run", "--train_file",
                           "squad/train-v2.0.json"], capture_output=True, text=True, env=env,
                          check=True)
    request = json.loads(proc.stdout)
    assert request["HyperParameters"]["sagemaker_program"] == "run_squad.py"
    assert request["HyperParameters"]["sagemaker_mpi_num_of_processes_per_host"] == "4"
    assert request["HyperParameters"]["train_file"] == "squad/train-v2.0.json"
    assert "CheckpointConfig" not in request


def test_spot_needs_checkpoint_uri():
    ls = load_launcher()
    argv = [a for a in JOB]
    i = argv.index("--checkpoint_s3_uri")
    del argv[i:i + 2]
    args, rest = ls.parse_args(argv)
    with pytest.raises(ls.LaunchError, match="--use_spot needs --checkpoint_s3_uri"):
        ls.build_request(args, rest, "x")


@pytest.mark.parametrize("entry", ["run_pretraining", "run_squad", "run_classifier"])
def test_only_boolean_flags_turn_true_false_into_a_bare_flag(entry, no_aws, capsys):
    """Issue 24 item 14: `--val_dir false` passed the launcher and the container dropped it
    (no validation). The launcher's request, then the container's entry script as the SageMaker
    toolkit calls it (`--name value` per hyperparameter), reach the trainer's parser as: a
    boolean flag's "true" the flag, its "false" nothing, any other flag's "false" its value."""
    import importlib

    scored = "test_file" if entry == "run_classifier" else "predict_file"
    data = ["--train_dir", "t", "--val_dir", "false"] if entry == "run_pretraining" else [
        "--train_file", "false", f"--{scored}", "true"]
    ls = load_launcher()
    code = ls.main(["--entry_point", entry, "--dry_run", *data, "--total_steps", "10",
                    "--skip_xla", "false", "--no_progress", "true", "--eager"])
    out, err = capsys.readouterr()
    assert code == 0, err
    hp = json.loads(out)["HyperParameters"]
    toolkit_argv = [item for key, value in hp.items() if not key.startswith("sagemaker_")
                    for item in (f"--{key}", value)]
    module = importlib.import_module(f"albert.{entry}")
    parser = module.build_parser()
    args = module.parse_args(decode(toolkit_argv, parser))
    if entry == "run_pretraining":
        assert hp["val_dir"] == "false" and args.val_dir == "false"
    else:
        # Values, not flags; relative data files are read under the FSx channel.
        assert (hp["train_file"], hp[scored]) == ("false", "true")
        prefix = hp["filesystem_prefix"]
        assert (args.train_file, getattr(args, scored)) == (f"{prefix}/false", f"{prefix}/true")
    assert (args.skip_xla, args.no_progress, args.eager) == (False, True, True)
    assert "--skip_xla" in boolean_flags(parser) and "--val_dir" not in boolean_flags(parser)

    # A flag that takes a value, given none, is refused (it would arrive as the value "True").
    code = ls.main(["--entry_point", entry, "--dry_run", *data, "--total_steps", "10",
                    "--warmup_steps"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == (f"error: --warmup_steps needs a value ({entry} takes --warmup_steps "
                   "VALUE); nothing submitted\n")


@pytest.mark.e2e
def test_run_classifier_is_an_entry_point(tmp_path, no_aws, capsys):
    """Issue 23: the launcher takes --entry_point run_classifier, checks its flags with
    run_classifier's own parser, and the image's entry script runs run_classifier from the
    toolkit's `--name value` pairs (here a plan-only run). The entry script runs as the
    container runs it: a process of its own, in a working directory it must leave empty."""
    env = {**os.environ, **ENV}
    ls = load_launcher()
    argv = ["--entry_point", "run_classifier", "--dry_run",
            "--instance_type", "ml.g5.12xlarge", "--glue_task", "sst2", "--train_file",
            "glue/SST-2/train.tsv", "--export_dir", "/opt/ml/model/1", "--model_size", "tiny",
            "--total_steps", "10", "--plan_only"]
    code = ls.main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    hp = json.loads(out)["HyperParameters"]
    assert hp["sagemaker_program"] == "run_classifier.py"
    assert (hp["glue_task"], hp["export_dir"], hp["plan_only"]) == ("sst2", "/opt/ml/model/1",
                                                                    "True")
    assert os.path.isfile(os.path.join(REPO_ROOT, "docker", "sagemaker", "run_classifier.py"))
    code = ls.main(argv + ["--doc_stride", "128"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: unknown flag(s) --doc_stride")
    assert "one that run_classifier accepts" in err

    toolkit_argv = [item for key, value in hp.items() if not key.startswith("sagemaker_")
                    for item in (f"--{key}", value)]
    entry = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "docker", "sagemaker",
                                                         hp["sagemaker_program"]),
                            *toolkit_argv], capture_output=True, text=True, env=env,
                           timeout=300, cwd=tmp_path)
    assert entry.returncode == 0, entry.stderr[-3000:]
    assert "batch plan: 32 x 1 x 1 = 32" in entry.stdout
    assert os.listdir(tmp_path) == []  # a plan: nothing trained, nothing written


ENTRY_TASKS = {"run_pretraining": ("albert.tasks.pretraining_options", "PretrainingDeclaration"),
               "run_squad": ("albert.tasks.squad_options", "SquadDeclaration"),
               "run_classifier": ("albert.tasks.classifier_options", "ClassifierDeclaration")}


def logged_lines(task, order, capsys) -> tuple[str, dict]:
    """Every line `task` logs, printed by the trainers' own logger with its keys in `order`
    (a function of the names), and the values it was given."""
    from albert.train.distributed import Distributed
    from albert.train.run_logging import MetricsLogger

    metrics = MetricsLogger(None, Distributed())
    # Each format the logger writes: small, large (fixed point), tiny (exponent), whole, negative.
    samples = (0.123456, 12345.678, 2.5e-05, 3, -0.75, 71.93)
    values = {}
    for prefix, names in task.logged.items():
        line = {name: samples[i % len(samples)] + (i // len(samples))
                for i, name in enumerate(names)}
        values[prefix] = line
        metrics.log(prefix, 17, {name: line[name] for name in order(list(names))})
    return capsys.readouterr().out, values


@pytest.mark.parametrize("entry", sorted(ENTRY_TASKS))
def test_metric_definitions_read_each_logged_value_in_any_key_order(entry, capsys):
    """The launcher's MetricDefinitions come from the task the entry point runs (Task.logged) and
    read each value from lines the trainers' logger prints, whatever the order of the keys; a
    regex reads no line of another prefix (of any task: "val" is in "eval")."""
    import importlib
    import random

    ls = load_launcher()
    module, name = ENTRY_TASKS[entry]
    task = ls.entry_task(entry)
    assert task is getattr(importlib.import_module(module), name)
    definitions = ls.metric_definitions(task)
    assert len(definitions) <= 40  # SageMaker's limit per job
    assert len({d["Name"] for d in definitions}) == len(definitions)
    rng = random.Random(0)
    orders = (lambda names: names, lambda names: names[::-1],
              lambda names: rng.sample(names, len(names)))
    for order in orders:
        out, values = logged_lines(task, order, capsys)
        for definition in definitions:
            prefix, metric = definition["Name"].split(":")
            found = re.findall(definition["Regex"], out)
            assert len(found) == 1, (definition, out)
            assert float(found[0]) == pytest.approx(values[prefix][metric], rel=1e-3), definition
    others = [ls.entry_task(e) for e in ENTRY_TASKS if e != entry]
    for other in others:
        out, _ = logged_lines(other, lambda names: names, capsys)
        foreign = "".join(line + "\n" for line in out.splitlines()
                          if line.split(" step ")[0] not in task.logged)
        assert not any(re.findall(d["Regex"], foreign) for d in definitions)


@pytest.mark.slow
def test_metric_regexes_match_real_log_lines(sample_records, sample_vocab, squad_fine_tune,
                                             tmp_path):
    """Each job's regexes checked against what its trainer actually prints: every value the
    run's metrics.jsonl (or eval_results.json) holds is read; a metric this run did not log is
    not. The pretraining lines from a 2-step run, the fine-tuning ones from the shared SQuAD
    fine-tune, both in this process (their stdout as a process writes it)."""
    ls = load_launcher()
    code, pre, err = run_in_process("run_pretraining", [
        "--filesystem_prefix", str(sample_records), "--train_dir", "train", "--val_dir",
        "validation", "--model_size", "tiny", "--spm_model", sample_vocab, "--max_seq_length",
        str(SEQ), "--max_predictions_per_seq", str(PREDS), "--per_gpu_batch_size", "8",
        "--total_steps", "2", "--log_frequency", "1", "--validation_frequency", "2",
        "--checkpoint_dir", str(tmp_path / "ck"), "--log_dir", str(tmp_path / "lg"),
        "--skip_xla", "--no_progress"])
    assert code == 0, err[-3000:]

    def last_of_each(log_dir):
        records = {}
        for line in open(log_dir / "metrics.jsonl"):
            record = json.loads(line)
            records[record["split"]] = record  # SageMaker reports the last match in the log
        return records

    squad = squad_fine_tune.dir
    squad_records = last_of_each(squad / "logs")
    squad_records["eval"] = json.loads((squad / "pred" / "eval_results.json").read_text())
    for entry, stdout, records in (
            ("run_pretraining", pre, last_of_each(tmp_path / "lg")),
            ("run_squad", squad_fine_tune.stdout, squad_records)):
        definitions = ls.metric_definitions(ls.entry_task(entry))
        read = 0
        for metric in definitions:
            prefix, name = metric["Name"].split(":")
            matches = re.findall(metric["Regex"], stdout)
            value = records.get(prefix, {}).get(name)
            if not isinstance(value, int | float):
                assert not matches, metric
                continue
            assert matches, metric
            assert float(matches[-1]) == pytest.approx(value, rel=2e-3, abs=1e-6), metric
            read += 1
        # Its training line whole (seq_per_sec: the second update's), and its scores.
        assert read >= len(ls.entry_task(entry).logged["train"]) + 2, entry


@pytest.mark.e2e
def test_dockerfile_is_hadolint_clean():
    dockerfile = os.path.join(REPO_ROOT, "docker", "Dockerfile")
    proc = subprocess.run([os.path.join(BIN, "hadolint"), dockerfile], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = open(dockerfile).read()
    assert "bash scripts/patch_horovod.sh" in text  # shares setup's patch step
    assert "ssh-keygen" not in text and "rm -f /etc/ssh/ssh_host_*" in text


TEMPLATES = [os.path.join(REPO_ROOT, "cloudformation", n) for n in ("fsx.yaml", "ec2.yaml")]


@pytest.mark.e2e
def test_templates_are_cfn_lint_clean():
    proc = subprocess.run([os.path.join(BIN, "cfn-lint"), *TEMPLATES], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _open_ingress(template: dict) -> list[str]:
    """Every ingress rule open to the world, and any CIDR parameter defaulting to it."""
    world = {"0.0.0.0/0", "::/0"}
    found = []
    for name, resource in template.get("Resources", {}).items():
        props = resource.get("Properties", {})
        rules = []
        if resource.get("Type") == "AWS::EC2::SecurityGroup":
            rules = props.get("SecurityGroupIngress", [])
        elif resource.get("Type") == "AWS::EC2::SecurityGroupIngress":
            rules = [props]
        for rule in rules:
            for key in ("CidrIp", "CidrIpv6"):
                value = rule.get(key)
                if isinstance(value, str) and value in world:
                    found.append(f"{name}.{key}")
                if isinstance(value, dict) and "Ref" in value:
                    param = template.get("Parameters", {}).get(value["Ref"], {})
                    if param.get("Default") in world:
                        found.append(f"{name}.{key} -> parameter {value['Ref']} default")
    return found


@pytest.mark.parametrize("path", TEMPLATES)
def test_no_ingress_open_to_the_world(path):
    from cfnlint.decode import decode

    template, matches = decode(path)
    assert not matches and template
    assert _open_ingress(template) == []


def test_open_ingress_check_catches_a_bad_template():
    bad = {"Parameters": {"Cidr": {"Type": "String", "Default": "0.0.0.0/0"}},
           "Resources": {
               "A": {"Type": "AWS::EC2::SecurityGroup", "Properties": {
                   "SecurityGroupIngress": [{"CidrIp": "0.0.0.0/0", "FromPort": 22}]}},
               "B": {"Type": "AWS::EC2::SecurityGroupIngress", "Properties": {
                   "CidrIp": {"Ref": "Cidr"}}}}}
    assert _open_ingress(bad) == ["A.CidrIp", "B.CidrIp -> parameter Cidr default"]


# -- hostile input (issue 13, item 11) --------------------------------------------------------

ENV = {"SAGEMAKER_ROLE": "arn:aws:iam::123456789012:role/R", "SAGEMAKER_IMAGE_NAME": "img:1",
       "SAGEMAKER_FSX_ID": "fs-0123456789abcdef0", "SAGEMAKER_FSX_MOUNT_NAME": "mnt",
       "SAGEMAKER_SUBNET_IDS": "subnet-1", "SAGEMAKER_SECURITY_GROUP_IDS": "sg-1",
       "SAGEMAKER_OUTPUT_S3_URI": "s3://bkt/o"}


@pytest.fixture
def no_aws(monkeypatch):
    """Launcher settings from the environment, and no way to reach AWS: a submission that got
    through would fail with another message than the one a test expects."""
    for k, v in {**ENV, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                 "AWS_MAX_ATTEMPTS": "1"}.items():
        monkeypatch.setenv(k, v)
    return ["--endpoint_url", "http://127.0.0.1:9"]


def test_launcher_dry_run_hyphen_does_not_submit(no_aws, capsys):
    """Item 11: `--dry-run` (and every launcher flag spelt with hyphens) is the launcher's own,
    not a hyperparameter of a real submission; space-separated ids are separate ids."""
    ls = load_launcher()
    code = ls.main(["--entry-point", "run_squad", "--dry-run", "--instance-type",
                    "ml.g5.12xlarge", "--subnet-ids", "subnet-a", "subnet-b,subnet-c",
                    "--security_group_ids", "sg-1", "sg-2", "--train_file", "squad/train.json",
                    "--endpoint_url", "http://127.0.0.1:9"])
    out, err = capsys.readouterr()
    assert code == 0, err
    request = json.loads(out)
    hp = request["HyperParameters"]
    assert not {"dry-run", "dry_run", "instance-type", "subnet-ids"} & set(hp)
    assert hp["train_file"] == "squad/train.json"
    assert request["ResourceConfig"]["InstanceType"] == "ml.g5.12xlarge"
    assert request["VpcConfig"] == {"Subnets": ["subnet-a", "subnet-b", "subnet-c"],
                                    "SecurityGroupIds": ["sg-1", "sg-2"]}


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--dry-runn"], "unknown flag(s) --dry-runn (did you mean --dry-run?): neither a "
                         "launcher flag nor one that run_pretraining accepts"),
        (["--instance_cont", "2"], "--instance_cont (did you mean --instance_count?)"),
        (["--total-steps", "10"], "--total-steps (did you mean --total_steps?)"),
        (["--total_steps", "ten"], "run_pretraining would refuse these flags: argument "
                                   "--total_steps: invalid int value: 'ten'"),
        (["--total_steps", "0"], "run_pretraining would refuse these flags: --total_steps must "
                                 "be at least 1, got 0"),
    ],
)
def test_launcher_refuses_unknown_flags_before_submitting(extra, message, no_aws, capsys):
    """Item 11: flags neither the launcher nor the entry point accepts stop the launch."""
    ls = load_launcher()
    argv = ["--entry_point", "run_pretraining", "--total_steps", "100", *no_aws, *extra]
    assert ls.main(argv) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and message in err and len(err.splitlines()) == 1
    assert "submitted" not in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--processes_per_host", "0"], "--processes_per_host must be at least 1, got 0"),
        (["--processes-per-host", "-2"], "--processes_per_host must be at least 1, got -2"),
        (["--volume_size", "-5"], "--volume_size must be at least 1, got -5"),
        (["--max_run", "-1"], "--max_run must be at least 1, got -1"),
        (["--instance_count", "0"], "--instance_count must be at least 1, got 0"),
        (["--role", "SageMakerRole"], "--role must be an IAM role ARN like"),
        (["--role", "arn:aws:iam::1234:role/R"], "--role must be an IAM role ARN like"),
        (["--output_s3_uri", "bucket/out"], "--output_s3_uri must look like s3://bucket/prefix"),
        (["--use_spot", "--checkpoint_s3_uri", "s3:/bkt/ckpt"],
         "--checkpoint_s3_uri must look like s3://bucket/prefix"),
        (["--subnet_ids", ","], "--subnet_ids holds no ids"),
    ],
)
def test_launcher_validates_numbers_role_and_s3_uris(extra, message, no_aws, capsys):
    """Item 11: negative sizes, 0 processes per host (was silently 8), a malformed role ARN or
    S3 URI are one-line errors; nothing is submitted."""
    ls = load_launcher()
    assert ls.main(["--entry_point", "run_squad", "--train_file", "t.json", *no_aws,
                    *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and len(err.splitlines()) == 1


def test_launcher_aws_errors_are_one_line(no_aws, monkeypatch, capsys):
    """Item 11: botocore/boto3 errors (no region; a bucket that does not exist on a real moto
    server) are one `error: ...` line, exit 2, not a traceback."""
    from moto.server import ThreadedMotoServer

    ls = load_launcher()
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    assert ls.main(["--entry_point", "run_squad", "--train_file", "t.json", *no_aws]) == 2
    assert capsys.readouterr().err == (
        "error: the AWS call failed (NoRegionError): You must specify a region.\n")

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        assert ls.main(["--entry_point", "run_squad", "--train_file", "t.json", "--region",
                        "us-east-1", "--endpoint_url", f"http://{host}:{port}", "--source_dir",
                        os.path.join(REPO_ROOT, "docker")]) == 2
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert err.startswith("error: the AWS call failed (S3UploadFailedError): ")
    assert "NoSuchBucket" in err and len(err.splitlines()) == 1


# -- issue 24 item 10: the container entrypoint's per-attempt SSH key ---------------------------

ENTRYPOINT = os.path.join(REPO_ROOT, "docker", "entrypoint.sh")


def start_host(tmp_path, host, shared, wait_s=60):
    """docker/entrypoint.sh as SageMaker starts it on `host` of a two-host job (algo-1 leads),
    with its paths redirected under tmp_path; `true` stands for the training command."""
    home = tmp_path / host
    home.mkdir(exist_ok=True)
    (home / "resourceconfig.json").write_text(json.dumps(
        {"current_host": host, "hosts": ["algo-2", "algo-1"]}))
    env = {**os.environ, "ALBERT_SSH_DIR": str(home / "ssh"),
           "ALBERT_SSH_HOST_KEY_DIR": str(home / "etc-ssh"),
           "ALBERT_RESOURCE_CONFIG": str(home / "resourceconfig.json"),
           "ALBERT_SSH_SHARED": str(shared), "ALBERT_SSH_WAIT_S": str(wait_s),
           "ALBERT_SSH_POLL_S": "0.1"}
    return subprocess.Popen(["bash", ENTRYPOINT, "true"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return err


def leader_key(tmp_path):
    return (tmp_path / "algo-1" / "ssh" / "id_ed25519.pub").read_text().strip()


def authorized(tmp_path):
    return (tmp_path / "algo-2" / "ssh" / "authorized_keys").read_text().splitlines()


@pytest.mark.e2e
@pytest.mark.parametrize("first", ["leader", "worker"])
def test_entrypoint_worker_authorises_only_this_attempts_leader_key(first, tmp_path):
    import time

    shared = tmp_path / "fsx" / ".albert-ssh" / "job"
    order = ["algo-1", "algo-2"] if first == "leader" else ["algo-2", "algo-1"]
    procs = {}
    for host in order:
        procs[host] = start_host(tmp_path, host, shared)
        time.sleep(1.0)
    for proc in procs.values():
        finish(proc)
    first_key = leader_key(tmp_path)
    assert authorized(tmp_path) == [first_key]
    assert (tmp_path / "algo-1" / "etc-ssh" / "ssh_host_ed25519_key").is_file()
    assert oct((tmp_path / "algo-2" / "ssh" / "authorized_keys").stat().st_mode & 0o777) == "0o600"

    # A managed-spot restart: same job name, the previous attempt's files still on FSx (plus
    # the single leader.pub that older images published), and the worker starts first. It must
    # not take the stale key: it is still waiting when the new leader starts.
    (shared / "leader.pub").write_text(first_key + "\n")
    worker = start_host(tmp_path, "algo-2", shared)
    time.sleep(2.0)
    assert worker.poll() is None, worker.communicate()
    assert authorized(tmp_path) == [first_key]  # unchanged while it waits
    leader = start_host(tmp_path, "algo-1", shared)
    finish(leader)
    finish(worker)
    second_key = leader_key(tmp_path)
    assert second_key != first_key
    assert authorized(tmp_path) == [second_key]  # the old attempt's key is gone
    assert not (shared / "leader.pub").exists()


@pytest.mark.e2e
def test_entrypoint_worker_without_this_attempts_leader_key_gives_up(tmp_path):
    shared = tmp_path / "fsx" / ".albert-ssh" / "job"
    # A previous attempt's answer for algo-2, to a nonce of that attempt.
    (shared / "keys").mkdir(parents=True)
    (shared / "keys" / "algo-2").write_text("0123abcd ssh-ed25519 AAAA albert-leader-old\n")
    proc = start_host(tmp_path, "algo-2", shared, wait_s=2)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert err.strip() == (f"error: no key from the leader (algo-1) for this attempt in {shared} "
                           "after 2s")
    assert not (tmp_path / "algo-2" / "ssh" / "authorized_keys").exists()


def test_launcher_closing_hints_are_shell_quoted(no_aws, monkeypatch, capsys):
    ls = load_launcher()
    monkeypatch.setattr(ls, "submit", lambda args, request: "local zone; echo hi")
    assert ls.main(["--entry_point", "run_squad", "--train_file", "t.json", *no_aws]) == 0
    out = capsys.readouterr().out
    assert "describe-training-job --region 'local zone; echo hi' --training-job-name albert-" in out
    assert "TrainingJobs --region 'local zone; echo hi' --log-stream-name-prefix albert-" in out


# -- issue 34 items 2 and 9: where a fine-tune's outputs go; the launcher's own refusals ---------


def test_a_relative_output_path_is_said_to_go_to_the_jobs_model_directory(no_aws, capsys):
    """A relative --export_dir would be under the image's working directory, lost with the
    container: the launcher says where the job writes it (and what keeps it on FSx); one that
    climbs out of the model directory is refused. No output flag at all: nothing to say."""
    ls = load_launcher()
    job = ["--entry_point", "run_classifier", "--train_file", "glue/SST-2/train.tsv",
           "--dry_run", *no_aws]
    assert ls.main(job) == 0
    out, err = capsys.readouterr()
    assert err == "" and "export_dir" not in json.loads(out)["HyperParameters"]
    assert ls.main([*job, "--export_dir", "serving/1"]) == 0
    out, err = capsys.readouterr()
    name = json.loads(out)["TrainingJobName"]
    assert err == ("warning: --export_dir serving/1 is relative: the job writes it to "
                   "/opt/ml/model/serving/1, uploaded in "
                   f"s3://bkt/o/{name}/output/model.tar.gz when the job ends; to keep it on FSx "
                   "give /opt/ml/input/data/fsx/serving/1\n")
    assert ls.main([*job, "--output_dir", "../runs/sst2"]) == 2
    assert capsys.readouterr().err == (
        "error: --output_dir ../runs/sst2 leaves the job's model directory (/opt/ml/model), "
        "where nothing is kept: give a path below it (uploaded when the job ends), or an "
        "absolute one on an input channel (/opt/ml/input/data/fsx/...); nothing submitted\n")


@pytest.mark.e2e
@pytest.mark.slow
def test_a_launched_fine_tune_without_output_flags_writes_only_to_sm_model_dir(
        sample_vocab, tmp_path, no_aws, capsys):
    """End to end: the launcher's --dry_run request, its hyperparameters given to the image's
    entry script as the toolkit gives them, with SM_MODEL_DIR set and a working directory of
    its own: a fine-tune without any output flag leaves its results in SM_MODEL_DIR and
    nothing in the working directory. The entry script runs as the container runs it, a process
    with that environment and working directory."""
    from albert.demo.classification_sample import write_task

    write_task(str(tmp_path / "fsx" / "topic"), "topic", seed=0)
    env = {**os.environ, **ENV}
    code = load_launcher().main([
        "--entry_point", "run_classifier", "--dry_run", "--instance_type", "ml.g5.xlarge",
        "--train_file", "topic/train.tsv", "--eval_file", "topic/dev.tsv", "--model_size",
        "tiny", "--config_override", "num_hidden_layers=1", "--spm_model", sample_vocab,
        "--max_seq_length", "32", "--per_gpu_batch_size", "8", "--total_steps", "1", "--xla",
        "off", "--no_progress", "--verbose"])
    out, err = capsys.readouterr()
    assert code == 0 and err == "", err
    hp = json.loads(out)["HyperParameters"]
    hp["filesystem_prefix"] = str(tmp_path / "fsx")  # the FSx channel, here
    toolkit_argv = [item for key, value in hp.items() if not key.startswith("sagemaker_")
                    for item in (f"--{key}", value)]
    (tmp_path / "model").mkdir()
    (tmp_path / "workdir").mkdir()
    entry = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "docker", "sagemaker", hp["sagemaker_program"]),
         *toolkit_argv], capture_output=True, text=True, timeout=300, cwd=tmp_path / "workdir",
        env={**env, "SM_MODEL_DIR": str(tmp_path / "model"),
             "SM_OUTPUT_DATA_DIR": str(tmp_path / "output")})
    assert entry.returncode == 0, entry.stderr[-3000:]
    assert os.listdir(tmp_path / "workdir") == []
    model = tmp_path / "model"
    assert (model / "eval_results.json").is_file() and (model / "logs").is_dir()
    assert (model / "checkpoints" / "final" / "model.safetensors").is_file()
    assert f"model in {model / 'checkpoints' / 'final'}" in entry.stdout


@pytest.mark.parametrize("extra, refused", [
    (["--overwrite_output_dir"], True),
    (["--overwrite_output_dir", "--overwrite_checkpoint_dir"], False),
    (["--overwrite_output_dir", "--checkpoint_dir", "/opt/ml/input/data/fsx/ckpt",
      "--overwrite_checkpoint_dir"], False),
])
def test_overwrite_output_dir_with_a_checkpoint_uri_never_blames_the_launchers_flag(
        extra, refused, no_aws, capsys):
    """--checkpoint_s3_uri makes the launcher set --checkpoint_dir /opt/ml/checkpoints; with
    --overwrite_output_dir the entry point's refusal of that combination was a FlagError
    traceback naming a --checkpoint_dir the user never gave. Now one line saying what the
    launcher did and the ways on; with --overwrite_checkpoint_dir the job is made."""
    ls = load_launcher()
    argv = ["--entry_point", "run_squad", "--train_file", "t.json", "--dry_run",
            "--checkpoint_s3_uri", "s3://bkt/ckpt", *no_aws, *extra]
    assert ls.main(argv) == (2 if refused else 0)
    out, err = capsys.readouterr()
    if refused:
        assert err == (
            "error: --overwrite_output_dir discards the run under --output_dir, but with "
            "--checkpoint_s3_uri the job's checkpoints are in /opt/ml/checkpoints (synced with "
            "that prefix), which it keeps: to start afresh give a --checkpoint_s3_uri that holds "
            "no run, or add --overwrite_checkpoint_dir to discard them at every start of the job "
            "(a spot restart too)\n")
        assert out == ""
    else:
        assert err == "" and json.loads(out)["HyperParameters"]["overwrite_output_dir"] == "True"


def test_a_flag_combination_the_entry_point_refuses_is_one_launcher_error(no_aws, capsys):
    """Any FlagError of the entry point's parser (here: --checkpoint_dir given apart from
    --output_dir with --overwrite_output_dir) is the launcher's one-line error, not a
    traceback."""
    ls = load_launcher()
    assert ls.main(["--entry_point", "run_squad", "--train_file", "t.json", "--dry_run",
                    "--overwrite_output_dir", "--checkpoint_dir", "/opt/ml/input/data/fsx/c",
                    *no_aws]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: run_squad would refuse these flags: --overwrite_output_dir "
                          "discards the run under --output_dir /opt/ml/model; --checkpoint_dir "
                          "/opt/ml/input/data/fsx/c lies elsewhere")
    assert len(err.splitlines()) == 1


def test_the_launcher_passes_verbose_on_to_the_job(no_aws, capsys):
    """Every command takes --verbose: so does the launcher, for the job (docs/cloud.md)."""
    ls = load_launcher()
    assert ls.main(["--entry_point", "run_squad", "--train_file", "t.json", "--dry_run",
                    "--verbose", *no_aws]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["HyperParameters"]["verbose"] == "True"


# -- issue 50 item 11: outputs a job would lose, the `--` separator; Horovod's log lines ---------


@pytest.mark.parametrize("output, line", [
    (["--checkpoint_dir", "s3://bkt/c"],
     "error: --checkpoint_dir s3://bkt/c is a URL, where a SageMaker job needs a local path: give "
     "a relative one (under the job's model directory /opt/ml/model, uploaded when the job "
     "ends), or an absolute one on an input channel (/opt/ml/input/data/fsx/...) (S3 "
     "checkpoints: the launcher's --checkpoint_s3_uri syncs /opt/ml/checkpoints with a prefix); "
     "nothing submitted\n"),
    (["--output_dir=s3://bkt/year=2024/o"], "error: --output_dir s3://bkt/year=2024/o is a URL"),
    (["--export", "../srv"], "error: --export_dir ../srv leaves the job's model directory"),
])
def test_the_launcher_refuses_the_output_paths_the_entry_script_refuses(output, line, no_aws,
                                                                        capsys):
    """An S3 value for an output flag was called "relative" and only warned about; the
    launcher now refuses what the container's entry script would (the same rule), in one
    line, before anything is submitted."""
    ls = load_launcher()
    assert ls.main(["--entry_point", "run_squad", "--train_file", "t.json", "--dry_run",
                    *no_aws, *output]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(line) and len(err.splitlines()) == 1, err


def test_after_a_double_dash_every_argument_is_the_trainers(no_aws, capsys):
    """`launch_sagemaker.py <launcher flags> -- <trainer flags>`, as a command that runs another
    reads it, was "unknown flag(s) --, --output_dir (did you mean --output_dir?)"."""
    ls = load_launcher()
    launch = ["--entry_point", "run_squad", "--dry_run", *no_aws]
    assert ls.main([*launch, "--", "--train_file", "t.json", "--output_dir", "runs/x",
                    "--config_override=hidden_size=64"]) == 0
    out, err = capsys.readouterr()
    hp = json.loads(out)["HyperParameters"]
    assert (hp["train_file"], hp["output_dir"], hp["config_override"]) == (
        "t.json", "runs/x", "hidden_size=64")
    assert "--" not in hp and "" not in hp
    assert err.startswith("warning: --output_dir runs/x is relative")
    # Still checked: a launcher flag among the trainer's, a second separator, a typo.
    for trainer, message in (
            (["--train_file", "t.json", "--dry_run"],
             "error: unknown flag(s) --dry_run (the launcher's flag: give it before --): "),
            (["--train_file", "t.json", "--", "--seed", "1"],
             "error: unexpected argument '--': training flags are --name value\n"),
            (["--train_file", "t.json", "--output_dirr", "o"],
             "error: unknown flag(s) --output_dirr (did you mean --output_dir?): ")):
        assert ls.main([*launch, "--", *trainer]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(message) and len(err.splitlines()) == 1, err


def test_no_refused_flag_is_suggested_as_the_fix_for_itself():
    """Whatever the trainer refuses, the hint never names the very flag refused."""
    ls = load_launcher()
    parser = ls._entry_module("run_squad").build_parser()
    for message in ("unrecognized arguments: --output_dir x --train_file",
                    "unrecognized arguments: --dry_run --dry-run --total_steps"):
        err = str(ls._refused("run_squad", parser, message))
        for flag in message.split(": ")[1].split():
            if flag.startswith("--"):
                assert f"{flag} (did you mean {flag}?)" not in err, err


def horovod_lines(out: str, rank: int, timestamp: bool) -> str:
    """`out` as Horovod's Gloo launcher forwards a rank's stdout: its own prefixing code
    (horovod.runner.common.util.safe_shell_exec), "[<rank>]<stdout>:" and, with
    --prefix-output-with-timestamp, the time before it."""
    import io

    from horovod.runner.common.util.safe_shell_exec import prefix_connection

    read, write = os.pipe()
    os.write(write, out.encode())  # a few hundred bytes: within a pipe's buffer
    os.close(write)
    forwarded = io.StringIO()
    with os.fdopen(read, "rb") as source:
        prefix_connection(source, forwarded, "stdout", rank, timestamp)
    return forwarded.getvalue()


def mpirun_lines(out: str, job: int, rank: int) -> str:
    """`out` as Open MPI's `mpirun --tag-output` forwards a rank's stdout: "[<job>,<rank>]
    <stdout>:" before each line (what horovod's mpi_run and SageMaker's MPI jobs run)."""
    return "".join(f"[{job},{rank}]<stdout>:{line}\n" for line in out.splitlines())


@pytest.mark.parametrize("entry", sorted(ENTRY_TASKS))
def test_metric_regexes_read_horovods_rank_prefixed_lines(entry, capsys):
    """A multi-GPU job's log is Horovod's: each line the trainers' logger prints (rank 0's)
    arrives prefixed with the rank, "[1,0]<stdout>:train step ...", where nothing but
    punctuation stands before the prefix word. Each regex reads each value there, as on a
    plain line, and never from another prefix's line."""
    ls = load_launcher()
    task = ls.entry_task(entry)
    plain, values = logged_lines(task, lambda names: names, capsys)
    assert plain.startswith(tuple(task.logged))  # the logger's own lines, unprefixed
    logs = {"plain": plain, "mpirun": mpirun_lines(plain, 1, 0),
            "gloo": horovod_lines(plain, 0, False),
            "gloo with time": horovod_lines(plain, 0, True)}
    assert logs["mpirun"].startswith("[1,0]<stdout>:") and "]<stdout>:" in logs["gloo"]
    for how, log in logs.items():
        assert len(log.splitlines()) == len(plain.splitlines()), how
        for definition in ls.metric_definitions(task):
            prefix, metric = definition["Name"].split(":")
            found = re.findall(definition["Regex"], log, re.MULTILINE)
            assert len(found) == 1, (how, definition, log)
            assert float(found[0]) == pytest.approx(values[prefix][metric], rel=1e-3), (
                how, definition)
