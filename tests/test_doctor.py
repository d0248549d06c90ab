"""`tracekit doctor` on the exact commands of ms-swift issue 6867 and on variations of them."""

import json
import os
import shlex

from click.testing import CliRunner

from tests.conftest import ROOT
from tracekit import doctor
from tracekit.cli import main

CASE = ROOT.parent / "shared" / "case" / "launch.sh"
NODE = dict(interfaces=["lo", "eth0"], rdma=False, network=False)


def case_commands():
    if not CASE.is_file():  # a user's clone: the same first line, as bash would split it
        text = ('torchrun --nnodes=2 --node_rank=0 --nproc_per_node=2 --master_addr=2605:340::1 --master_port=1 '
                './swift_pt.py --dataloader_num_workers 10 --deepspeed zero3_offload --lr_scheduler_kwargs '
                '"{ "num_decay_steps": 120, "num_stable_steps": 260}" --dataloader_num_workers 4 --report_to wandb')
        return [(1, shlex.split(text))]
    return doctor.commands_in_script(CASE.read_text())


def test_launch_sh_findings():
    commands = case_commands()
    for _, argv in commands:
        ids = {f.id for f in doctor.check(argv, env={}, **NODE)}
        assert ids == {"json-mangled", "repeated-flag", "zero3-multinode", "ipv6-master", "huge-ddp-timeout", "wandb-online"}


def test_mangled_json_gets_a_working_fix():
    argv = case_commands()[0][1]
    f = next(f for f in doctor.check(argv, env={}, **NODE) if f.id == "json-mangled")
    assert "{ num_decay_steps: 120, num_stable_steps: 260}" in f.what
    fixed = shlex.split(f.fix.split(": ", 1)[1])[1]
    assert json.loads(fixed) == {"num_decay_steps": 120, "num_stable_steps": 260}


def test_fixed_command_is_clean():
    argv = shlex.split("torchrun --nnodes=2 --node_rank=0 --nproc_per_node=2 --master_addr=10.0.0.1 --master_port=1 "
                       "./swift_pt.py --deepspeed zero2 --ddp_timeout 1800 --report_to tensorboard "
                       """--lr_scheduler_kwargs '{"num_decay_steps": 120}' --dataloader_num_workers 4""")
    assert doctor.check(argv, env={"NCCL_SOCKET_IFNAME": "eth0"}, **NODE) == []


def test_ipv6_master_with_ipv4_family_is_an_error_and_interfaces_are_named():
    argv = shlex.split("torchrun --nnodes 2 --master_addr fd00::1 train.py")
    found = {f.id: f for f in doctor.check(argv, env={"NCCL_SOCKET_FAMILY": "AF_INET"},
                                           interfaces=["lo", "eth0", "eth1"], rdma=True, network=True)}
    assert found["ipv6-master-ipv4-family"].severity == doctor.Severity.ERROR
    assert "eth0, eth1" in found["no-socket-ifname"].what


def test_one_node_needs_no_network_settings():
    argv = shlex.split("torchrun --nproc_per_node 4 train.py --deepspeed zero3_offload")
    assert doctor.check(argv, env={}, interfaces=["lo", "eth0", "eth1"], rdma=False, network=True) == []


def test_cli_script_and_command(tmp_path):
    r = CliRunner().invoke(main, ["doctor", "--json", "--script", str(CASE)] if CASE.is_file() else
                           ["doctor", "--json", "--", *case_commands()[0][1]])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert all(any(f["id"] == "huge-ddp-timeout" for f in c["findings"]) for c in out["commands"])
    if CASE.is_file():
        assert out["differences_between_commands"] == ["--node_rank: 0 | 1"]
    empty = tmp_path / "x.sh"
    empty.write_text("echo hi\n")
    r = CliRunner().invoke(main, ["doctor", "--script", str(empty)])
    assert r.exit_code == 2 and "no launch command" in r.output


def test_a_number_that_is_not_a_number_is_no_timeout_and_no_crash():
    for odd in ("²", "nan", "inf", "1e400", "١٢"):
        argv = ["torchrun", "--nnodes=2", "train.py", "--ddp_timeout", odd]
        assert "huge-ddp-timeout" not in {f.id for f in doctor.check(argv, env={}, **NODE)}
    r = CliRunner().invoke(main, ["doctor", "--", "torchrun", "train.py", "--ddp_timeout", "²"])
    assert r.exit_code == 0 and r.output == "command: 0 finding(s)\n"


def test_a_script_of_many_commands_gives_output_in_proportion(tmp_path):
    # each of N commands has a flag of its own: every flag differs, and each difference is one short item
    sizes = {}
    for n in (1000, 4000):
        script = tmp_path / f"{n}.sh"
        script.write_text("".join(f"torchrun --nnodes=2 train.py --f{i}=v\n" for i in range(n)))
        r = CliRunner().invoke(main, ["doctor", "--script", str(script)])
        assert r.exit_code == 0, r.output
        sizes[n] = len(r.output)
        assert r.output.endswith(f"--f{n - 1}: unset x{n - 1}, v x1\n")
    assert sizes[4000] < 4.5 * sizes[1000]  # 4x the commands, 4x the output (was 16x: every flag x every command)
    assert doctor.compare([["torchrun", "a.py", "--lr", "1"]] * 9 + [["torchrun", "a.py", "--lr", "2"]]) == [
        "--lr: 1 x9, 2 x1"]


def test_terminal_output_escapes_the_commands_words(tmp_path):
    r = CliRunner().invoke(main, ["doctor", "--", "torchrun", "train.py", "--x", "a\nfix: rm -rf /", "--x", "\x1b[2J"])
    assert r.exit_code == 0
    assert "--x is given 2 times (a\\nfix: rm -rf /, \\x1b[2J)" in r.output and "\x1b" not in r.output
    fifo = tmp_path / "launch.sh"
    os.mkfifo(fifo)
    r = CliRunner().invoke(main, ["doctor", "--script", str(fifo)])
    assert r.exit_code == 2 and r.output == f"error: {fifo}: a FIFO, not a file: skipped\n"
