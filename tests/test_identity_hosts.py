"""Hosts and ranks that MPI's runtimes name (issue 31, item 4): Open MPI's signal handler on a host of letters
alone, MXM's and older UCX's ``[host:pid:thread]``, PSM's ``host:rank1`` label, and one machine named by its
short name (NCCL) and its whole (Open MPI) counted once."""

from __future__ import annotations

from tests.factory import text_store as store_of, ranks_of as ranks, hosts_of as hosts


def test_open_mpis_signal_handler_names_its_host_even_of_letters_alone(tmp_path):
    # opal/util/stacktrace.c
    text = ("[good:02773] *** Process received signal ***\n"
            "[good:02773] Signal: Segmentation fault (11)\n"
            "[good:02773] Signal code: Invalid permissions (2)\n"
            "[good:02773] Failing at address: 0x7f1246cb4a00\n"
            "[good:02773] [ 0] /lib/x86_64-linux-gnu/libpthread.so.0(+0x11390)[0x7f12a1d6b390]\n"
            "[good:02773] *** End of error message ***\n")
    assert hosts(store_of(tmp_path, text)) == ["good"]
    # a logger's `[module:lineno] ` of the same shape names no host
    assert hosts(store_of(tmp_path, "[trainer:1234] loss went up\n")) == []


def test_mxm_and_older_ucx_name_host_and_pid_in_three_fields(tmp_path):
    text = ("[ava02:21329:1] Caught signal 11 (Segmentation fault)\n"
            "==== backtrace ====\n")
    s = store_of(tmp_path, text)
    assert hosts(s) == ["ava02"]
    assert s.ranks.filter(s.ranks["host"] == "ava02")["pid"].to_list() == [21329]


def test_psms_label_names_host_and_mpi_rank(tmp_path):
    # libfabric prov/psm3: the label `host:rank1` (and `.program`) heads its messages
    text = ("[1705415958.879795729] machine:rank1.cpu_allreduce_test: Reading from remote process' memory "
            "failed. Disabling CMA support\n"
            "machine:rank1: Assertion failure at psm3/ptl_am/ptl.c:196: nbytes == req->req_data.recv_msglen\n"
            "[neutron-nvidia:820212] [ 5] proton-nvidia:rank0:  Mismatched address format: remote EP "
            "(Invalid Fmt): Unknown (2) Local EP: IPv4 (4)\n")
    s = store_of(tmp_path, text)
    assert ranks(s) == [0, 1]
    assert "machine" in hosts(s) and "proton-nvidia" in hosts(s)
    # a URL's or a path's `:rank` is none
    assert ranks(store_of(tmp_path, "see http://docs:rank1.html: for more\n")) == []


def test_one_machine_by_its_short_name_and_its_whole_is_one_host(tmp_path):
    text = ("vm2:15364:15376 [0] NCCL INFO Created 1 queue info, destroyed 1\n"
            "vm1:58934:58946 [0] NCCL INFO Created 1 queue info, destroyed 1\n"
            "[vm2.com:15359] 1 more process has sent help message help-mpi-btl-openib.txt / error in init\n")
    assert hosts(store_of(tmp_path, text)) == ["vm1", "vm2"]
    # two machines of one domain stay two; an address is no name
    text = ("[node-a.cluster:15359] PMIX ERROR: UNREACHABLE in file server.c\n"
            "[node-b.cluster:15360] PMIX ERROR: UNREACHABLE in file server.c\n")
    assert hosts(store_of(tmp_path, text)) == ["node-a.cluster", "node-b.cluster"]


def test_an_error_codes_shape_under_pdshs_prefix_is_no_host(tmp_path):
    # Ascend CANN's error codes (`EH9999: Inner Error!`) fit the `host: ` prefix's shape
    text = ("worker-1: EH9999: 2024-07-03-11:28:40.450.757  wait for compute device to finish failed\n"
            "worker-1: EH9999: Inner Error!\n"
            "worker-1: EH9999: 2024-07-03-11:28:40.451.641  wait for compute device to finish failed\n")
    assert hosts(store_of(tmp_path, text)) == ["worker-1"]
    text = "EI9999: Inner Error!\nEI9999: [PID: 20044] 2024-10-21-10:42:00.104.560 The wait failed\n"
    assert hosts(store_of(tmp_path, text)) == []


def test_a_clocks_time_in_brackets_is_no_process(tmp_path):
    # rich's and many loggers' `[14:26:37] ` fit MXM's `[host:pid:thread]` but for a host of digits alone
    s = store_of(tmp_path, "[14:26:37] ERROR    Command '['python', 'train.py']' returned non-zero\n")
    assert hosts(s) == [] and s.ranks["pid"].drop_nulls().to_list() == []


def test_ucxs_logger_pads_the_pid_to_five_places(tmp_path):
    # ucs/debug/log.c: `[%lu.%06lu] [%s:%-5d:%s]`
    text = ("Sun Oct  1 17:01:10 2017[1,30]<stdout>:[1506866470.744682] [clx-hercules-065:1411 :0]       "
            "dc_verbs.c:633  UCX  ERROR Send completion with error: transport retry counter exceeded\n"
            "[1506866515.984779] [clx-hercules-012:26319:0]       dc_verbs.c:633  UCX  ERROR Send completion "
            "with error: transport retry counter exceeded\n")
    s = store_of(tmp_path, text)
    assert hosts(s) == ["clx-hercules-012", "clx-hercules-065"]
    assert 1411 in s.ranks["pid"].to_list()
