"""Start-up that never finished (session 24, issue 31: "a rendezvous or bootstrap that never completes (an init
stall, not a transport error)", "bootstrap failures called transport errors"): INIT_STALL that says the failure
and where, where an expert says it; the same socket failure after init completed stays the transport's."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit import start_up_messages as sm
from tracekit.ingest import ingest
from tracekit.rules_set_up import bootstrap_lines
from tracekit.evidence import Evidence
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"

# NCCL 2.21's bootstrap connect to the next rank's address failing (src/misc/socket.cc socketPollConnect's WARN,
# then the unwind through src/bootstrap.cc and src/init.cc), as in nccl-019 (sglang, NVIDIA/nccl issue thread)
NO_ROUTE = ("node2:300:300 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned "
            "113(No route to host) errno 115(Operation now in progress)\n"
            "node2:300:300 [6] NCCL INFO misc/socket.cc:570 -> 2\n"
            "node2:300:300 [6] NCCL INFO misc/socket.cc:621 -> 2\n"
            "node2:300:300 [6] NCCL INFO bootstrap.cc:285 -> 2\n"
            "node2:300:300 [6] NCCL INFO init.cc:1534 -> 2\n")
# NCCL's bootstrap finding no interface (src/bootstrap.cc's WARN, `Bootstrap : no socket interface found`)
NO_INTERFACE = ("host1:220:220 [0] bootstrap.cc:48 NCCL WARN Bootstrap : no socket interface found\n"
                "host1:220:220 [0] NCCL INFO init.cc:84 -> 3\n")
# a communicator whose init completed, then a proxy's connection closed mid-run (no bootstrap named)
AFTER_INIT = ("node1:100:100 [0] NCCL INFO comm 0x55a0 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x4e2a - Init "
              "COMPLETE\n"
              "node1:100:180 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer "
              "node2<40484>\n"
              "node1:100:180 [0] NCCL INFO misc/socket.cc:752 -> 6\n"
              "node1:100:180 [0] NCCL INFO transport/net_socket.cc:474 -> 6\n")


def test_a_bootstrap_connect_with_no_route_is_a_set_up_that_never_completed_naming_the_address(tmp_path):
    v = decide(text_store(tmp_path, NO_ROUTE))
    assert v.kind == Kind.INIT_STALL and v.rule == "bootstrap_failed"
    assert "10.0.0.4 port 56849" in v.summary and "No route to host" in v.summary
    assert "not reachable" in v.summary


def test_a_bootstrap_with_no_interface_says_which_setting_to_check(tmp_path):
    v = decide(text_store(tmp_path, NO_INTERFACE))
    assert v.kind == Kind.INIT_STALL and "no socket interface found" in v.summary
    assert "NCCL_SOCKET_IFNAME" in v.summary


def test_a_socket_failure_after_init_completed_names_no_bootstrap_and_stays_the_transports(tmp_path):
    store = text_store(tmp_path, AFTER_INIT)
    assert not bootstrap_lines(Evidence.gather(store)).height
    assert decide(store).kind != Kind.INIT_STALL


def test_a_bootstrap_failure_after_another_communicator_completed_init_is_not_re_kinded():
    # dv14-048: a 1-rank communicator completed init, then a new communicator's bootstrap bind failed mid-epoch
    v = decide(ingest([WILD / "dv14-048-nccl-bootstrap-bind-address-in-use-new-comm-per-step.txt"]))
    assert v.kind != Kind.INIT_STALL


@pytest.mark.parametrize("name, said", [
    ("dv11-060-mftcoder-barrier-bootstrap-no-socket-interface.txt", "no socket interface found"),
    ("dv20-001-yolov8-bootstrap-no-socket-interface.txt", "no socket interface found"),
    ("dev-116-espnet-4node-bootstrap-connection-refused.txt", "10.38.10.112 port 21724"),
    ("nccl-023-h800-bootstrap-ipv6-ib1-abort.txt", "fe80::966d:ae03:a2:8cf0%ib1"),
])
def test_real_bootstrap_failures_are_init_stalls_with_the_failure(name, said):
    v = decide(ingest([WILD / name]))
    assert v.kind == Kind.INIT_STALL and said in v.summary


def test_a_socket_failure_that_never_names_the_bootstrap_stays_a_transport_error():
    # torch-015: `socketStartConnect: Connect to ... failed : No route to host` under `Last error:`, no bootstrap
    v = decide(ingest([WILD / "torch-015-distbackend-socket-no-route-nccl2186.txt"]))
    assert v.kind == Kind.TRANSPORT_ERROR


def test_a_launch_without_its_rendezvous_variables_never_began_set_up_and_stays_a_crash():
    # dv12-014: torch/distributed/rendezvous.py _env_error, `environment variable RANK expected, but not set`
    v = decide(ingest([WILD / "dv12-014-vllm-k8s-pod-test-py-rank-env-not-set.txt"]))
    assert v.kind == Kind.CRASHED_RANK and "RANK expected, but not set" in v.summary


STUCK = ("The run gets stuck at the following for around 30mins\n"
         "[2023-01-30 08:34:30,454] [INFO] [comm.py:633:init_distributed] Initializing TorchBackend in DeepSpeed "
         "with backend nccl\n")


def test_a_start_up_announcement_with_a_word_that_it_waits_is_an_init_stall_naming_the_step(tmp_path):
    v = decide(text_store(tmp_path, STUCK))
    assert v.kind == Kind.INIT_STALL and v.rule == "start_up_unfinished"
    assert "Initializing TorchBackend" in v.summary and "gets stuck" in v.summary


def test_the_same_announcement_with_no_word_of_waiting_is_not_decided_by_it(tmp_path):
    v = decide(text_store(tmp_path, STUCK.split("\n", 1)[1] + "loading the model\n"))
    assert "stuck" not in v.summary and v.rule != "start_up_unfinished"


def test_the_announcement_followed_by_a_step_is_no_init_stall(tmp_path):
    v = decide(text_store(tmp_path, STUCK + "{'loss': 2.31, 'learning_rate': 5e-05, 'epoch': 0.01}\n"
                          "{'loss': 2.12, 'learning_rate': 5e-05, 'epoch': 0.02}\n"))
    assert v.kind != Kind.INIT_STALL


def test_a_wrapped_deepspeed_start_up_line_and_the_users_word_decide_dv16_006():
    v = decide(ingest([WILD / "dv16-006-transformers-ds-node1-stuck-init-node2-traceback.txt"]))
    assert v.kind == Kind.INIT_STALL and "Initializing TorchBackend in D" in v.summary
    assert "traceback raised in <module>" in v.summary


@pytest.mark.parametrize("line, name", [
    ("> initializing torch distributed ...", "megatron_init_distributed"),
    ("DEBUG 06-01 10:00:00 parallel_state.py:920] world_size=4 rank=1 local_rank=1 "
     "distributed_init_method=tcp://10.0.0.1:29500 backend=nccl", "vllm_init_distributed"),
    ("I0325 13:58:52.716724 130295542103168 distributed.py:172] Connecting to JAX distributed service on "
     "10.202.0.27:8482", "jax_connect_coordinator"),
    ("node1: [INFO] [comm.py:633:init_distributed] Initializing TorchBackend in D$", "deepspeed_init_distributed"),
])
def test_the_start_up_announcements_read_from_the_runtimes_code(line, name):
    m, _ = sm.read(line)
    assert m.name == name and m.means in sm.BEGUN


# gloo's pair connect at ProcessGroupGloo's creation (pytorch/gloo gloo/transport/tcp/pair.cc Pair::connect), as
# users post it: every rank advertised 127.0.1.1, the address /etc/hosts gives the host name
GLOO_REFUSED = ("RuntimeError: [/opt/conda/conda-bld/pytorch_1646755903507/work/third_party/gloo/gloo/transport/"
                "tcp/pair.cc:799] connect [127.0.1.1]:47363: Connection refused\n")


def test_gloo_that_could_not_connect_its_mesh_is_an_init_stall_naming_the_address_and_setting(tmp_path):
    v = decide(text_store(tmp_path, GLOO_REFUSED))
    assert v.kind == Kind.INIT_STALL and "[127.0.1.1]:47363" in v.summary
    assert "GLOO_SOCKET_IFNAME" in v.summary and "loopback" in v.summary


def test_gloo_that_lost_a_pair_mid_run_is_not_read_as_set_up(tmp_path):
    # a read on an established pair reset (pair.cc's `Read error`), after a step: no init stall
    v = decide(text_store(tmp_path, "Epoch 1 step 10/100 loss 2.1\nEpoch 1 step 20/100 loss 2.0\n"
                          "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:563] Read error "
                          "[10.0.0.2]:17795: Connection reset by peer\n"))
    assert v.kind != Kind.INIT_STALL
