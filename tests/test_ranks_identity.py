"""Rank identity from NCCL's own lines (issue 31 item 4: parsers/nccl_ranks.py), the coverage that says which
ranks are seen and which processes are not named, and UNDECIDED said as the situation (undecided.undecided),
each on real logs: the dev excerpts of samples/wild, the real runs of samples/."""

from __future__ import annotations

import polars as pl
import pytest

from tests.conftest import SAMPLES
from tracekit.evidence import Evidence, coverage
from tracekit.ingest import ingest
from tracekit.nccl_messages import meaning_of
from tracekit.undecided import init_state, undecided
from tracekit.verdict import Kind, decide

WILD = SAMPLES / "wild"


def one(prefix: str):
    return ingest([next(WILD.glob(prefix + "-*.txt"))])


def ranks(store) -> list[int]:
    return sorted(set(store.ranks["rank"].drop_nulls().to_list()))


@pytest.mark.parametrize("prefix, want, why", [
    # `Trees ... ->1->0` is rank 1's; `Channel 00/06 : 0 1` is written by rank 0 alone (graph/rings.cc) but
    # names no rank on its line (the labels of dev-058 and llm-058 read it so): only the size
    ("dev-040", [1], "a tree line names its writer; a ring's order names none"),
    # `UDS: Creating service thread comm 0x3641e160 rank 1` (proxy.cc) names its comm's rank, no size
    ("dev-104", [1], "a comm's rank without its size"),
    # `Destroyed comm 0x7f24c4001af0 rank 4` (init.cc before 2.12) on two hosts
    ("dev-066", [0, 4], "a destroyed comm's rank"),
    # `[rank18]:` is global; `Channel 00/1 : 1[2] -> 0[2] [send]` of a communicator of no logged size names
    # none of the launcher's ranks: another numbering (a send/recv pair's communicator)
    ("dev-027", [18], "NCCL ranks of no size that share none of the launcher's are not global"),
    # `[rank1]:` beside `Channel 10/0 : 1[1] -> 0[0]` and `Channel 10/1 : 3[3] -> 0[0]`: one numbering
    ("llm-030", [1, 3], "NCCL ranks that agree with the launcher's are global"),
    # NCCL's words about ranks other than the writer: two ranks on one GPU, a rank that checked in twice
    ("dev-082", [0, 1], "Duplicate GPU detected : rank 1 and rank 0"),
    ("dev-083", [0, 3, 7], "Duplicate GPU detected, twice"),
    ("dev-106", [1], "Bootstrap Root : rank 1 of 8 ranks has already checked in"),
    # NCCL 2.4's `init.cc:1247 NCCL WARN Mismatched collective detected ... around rank 39` (comm->rank)
    ("dev-006", [39], "the writer's own rank, on a line whose host:pid the paste lost"),
    # a ring's order alone: its writer is rank 0 of something, no rank is named (the label leaves it null)
    ("dev-058", [], "a ring's order alone names no rank"),
    ("dev-029", [], "a ring's order alone names no rank"),
])
def test_nccl_lines_name_global_ranks_and_only_those(prefix, want, why):
    assert ranks(one(prefix)) == want, why


def test_a_rank_checked_in_twice_gives_the_world_size():
    assert one("dev-106").ranks["world_size"].max() == 8


def test_a_bootstrap_message_of_another_size_is_an_init_failure_not_a_mismatch():
    """`bootstrap.cc:77 NCCL WARN Message truncated : received 256 bytes instead of 4`: bootstrap's
    socketRecv (src/bootstrap.cc:224) reads the set-up channel, never a collective's data."""
    m, got = meaning_of("Message truncated : received 256 bytes instead of 4")
    assert m.name == "bootstrap_truncated" and m.points_to[0] == "INIT_STALL" and got == {"got": "256", "expected": "4"}
    s = one("dev-027")
    assert not s.events.filter(pl.col("kind") == "collective_mismatch").height
    v = decide(s)
    assert v.kind == Kind.INIT_STALL and "bootstrap" in v.summary and "truncated" in v.summary


def test_an_address_of_no_network_family_is_not_a_transport_error():
    """NCCL 2.29's `ncclSocketInit: connecting to address  with family 1 is neither AF_INET(2) nor
    AF_INET6(10)` (src/misc/socket.cc:585): an empty handle (AF_UNIX), not the network failing."""
    s = one("nccl-049")
    ev = Evidence.gather(s)
    assert not ev.transport.height
    v = decide(s)
    assert v.kind == Kind.UNDECIDED and "error line" in v.summary


def test_nccl_24_mismatch_check_is_a_mismatch_on_the_rank_that_wrote_it():
    v = decide(one("dev-006"))
    assert v.kind == Kind.MISMATCH and "rank 39" in v.summary


def _coll_only(tmp_path, pids=("596", "597", "598", "599"), name="coll.log"):
    """The COLL lines of a real 4-rank run (samples/gpu_nccl_healthy, NCCL 2.28), and nothing else: no
    init line, no prefix, no rank named anywhere."""
    out = []
    for f in sorted((SAMPLES / "gpu_nccl_healthy").glob("nccl.vm.*.log")):
        out += [ln for ln in f.read_text().splitlines() if " opCount " in ln and ln.split(":")[1] in pids]
    path = tmp_path / name
    path.write_text("\n".join(out) + "\n")
    return path


def test_every_process_of_a_communicator_seen_is_one_rank_each(tmp_path):
    """Four processes of one `[nranks=4]` communicator with COLL lines and no init line: their collectives are
    numbered by count in one process group (which process holds which is not said), but no line names a
    rank, so the ranks table names none (s31: dv22-006's label; source nccl-count kept on the processes)."""
    s = ingest([_coll_only(tmp_path)])
    assert ranks(s) == []
    assert set(s.ranks["source"]) == {"nccl-count"} and s.ranks["world_size"].max() == 4
    assert s.collectives["pg"].n_unique() == 1 and s.collectives["rank"].null_count() == 0
    assert coverage(s).complete
    summary = decide(s).summary
    assert "ranks 0-3: last all_reduce #39" in summary
    assert "ranks numbered by counting the communicator's 4 processes: which process holds which" in summary


def test_fewer_processes_than_the_communicator_has_are_counted_not_named(tmp_path):
    """Three of the four: which ranks they are is not known, so none is named; coverage counts them."""
    s = ingest([_coll_only(tmp_path, pids=("596", "597", "598"))])
    assert ranks(s) == []
    cov = coverage(s)
    assert cov.seen == [] and cov.unranked == 3 and cov.describe() == "3 processes, ranks not named (world size 4)"


def test_counting_is_per_file_so_batching_does_not_change_the_store(tmp_path):
    """Each process's COLL lines in a file of its own: no file shows the whole communicator, so no rank is
    numbered, however ingest batches the files."""
    paths = [_coll_only(tmp_path, pids=(p,), name=f"{p}.log") for p in ("596", "597", "598", "599")]
    s = ingest(paths)
    assert ranks(s) == [] and coverage(s).unranked == 4


def test_undecided_says_both_ranks_finished_init_and_what_to_collect():
    """nccl-029: eight ranks finish NCCL init and log nothing after: the situation, what decides, what
    to collect, never the generic sentence."""
    s = one("nccl-029")
    st = init_state(s)
    assert st["nranks"] == 8 and st["ranks_done"] == list(range(8)) and not st["pending"]
    text, cited = undecided(Evidence.gather(s))
    assert text.startswith("ranks 0-7 finished NCCL init (Init COMPLETE, 8 of 8) and logged nothing after")
    assert "py-spy" in text and "Flight Recorder" in text and "no clean end or progress" not in text
    assert cited and all(c.line for c in cited)


def test_undecided_on_a_real_init_stall_names_the_rank_that_started_init():
    s = ingest([SAMPLES / "gpu_2x1_initstall"])
    text, _ = undecided(Evidence.gather(s))
    assert "Init START of the 2-rank communicator and no Init COMPLETE" in text and "collect:" in text


def test_undecided_with_processes_and_no_rank_says_so():
    text, _ = undecided(Evidence.gather(one("dev-058")))
    assert text.startswith("2 NCCL process(es) logged communicator set-up (network Socket, sockets over "
                           "[0]eth0:10.0.0.33<0>, [0]eth0:10.0.0.34<0>, ring and tree channels)")
    assert "2 process(es) seen, ranks not named" in text


def test_writers_glued_in_one_line_are_each_read():
    """llm-006: NCCL INFO lines of four processes run together without newlines; each prefix starts a
    message (`... threadThresholds 8g183:161258:166018 [1] NCCL INFO ncclCommSplit comm ... rank 1 nranks
    16 ... parent 0x55cd375g183:161262:166017 [5] ...`), and a host read with the glued characters before it
    (`0x55cd375g183`) is the file's own host that ends it."""
    s = one("llm-006")
    assert ranks(s) == [1, 5, 7] and s.ranks["host"].unique().to_list() == ["g183"]
    assert s.ranks["world_size"].max() == 16 and int(s.files["unknown"].sum()) == 0


def test_undecided_from_a_factory_store_of_two_ranks_after_init():
    """The shape rules.nothing hands over to (undecided.undecided): both ranks' Init COMPLETE and nothing
    after reads as the situation, with the ranks and `2 of 2`."""
    from tests.factory import make_store
    comms = [dict(file=f"nccl{r}.log", line=5, rank=r, comm="0xa", comm_id="c1", nranks=2, state="init_complete")
             for r in (0, 1)]
    s = make_store(comms=comms, ranks=[dict(file=f"nccl{r}.log", rank=r, world_size=2) for r in (0, 1)])
    text, cited = undecided(Evidence.gather(s))
    assert text.startswith("ranks 0-1 finished NCCL init (Init COMPLETE, 2 of 2) and logged nothing after")
    assert [c.file for c in cited] == ["nccl0.log", "nccl1.log"]
    # one of the two only started: the other's init is what is missing
    comms[1]["state"] = "init_start"
    text, _ = undecided(Evidence.gather(make_store(comms=comms)))
    assert text.startswith("rank 0 finished NCCL init (Init COMPLETE, 1 of 2) and rank 1 logged Init START")


@pytest.mark.parametrize("prefix, kind, said", [
    # `... ncclRemoteError: ... Last error: NET/IB : Got completion from peer ... with error 12, ...`
    ("torch-045", "transport_error", "NET/IB : Got completion from peer 11.214.147.122<39138> with error 12"),
    # `... 10: Last error: 10: socketStartConnect: Connect to 127.0.0.1<45069> failed : Software caused ...`
    ("torch-016", "nccl_warn", "socketStartConnect: Connect to 127.0.0.1<45069> failed"),
])
def test_nccl_last_error_quoted_inline_is_read_for_its_meaning(prefix, kind, said):
    """An exception pasted without its line breaks quotes NCCL's last error inline: read as NCCL's WARN."""
    s = one(prefix)
    e = s.events.filter(pl.col("where") == "NCCL's last error")
    assert e["kind"].cast(pl.Utf8).to_list() == [kind] and e["message"][0].startswith(said)
    assert decide(s).kind == Kind.TRANSPORT_ERROR


def test_the_one_process_no_line_names_holds_the_rank_left(tmp_path):
    """Three of four processes name their rank in their Init COMPLETE line (596 is 0, 597 is 2, 598 is 1);
    the fourth shows only COLL lines of the 4-rank communicator: it holds rank 3, as sure as a named one
    (it is: nccl.vm.599.log says `rank 3 nranks 4`)."""
    path = _coll_only(tmp_path)
    init = [ln for f in sorted((SAMPLES / "gpu_nccl_healthy").glob("nccl.vm.*.log")) for ln in f.read_text().splitlines()
            if "Init COMPLETE" in ln and ln.split(":")[1] in ("596", "597", "598")]
    path.write_text("\n".join(init) + "\n" + path.read_text())
    s = ingest([path])
    got = dict(s.ranks.filter(pl.col("pid").is_not_null()).select("pid", "rank").iter_rows())
    assert got == {596: 0, 597: 2, 598: 1, 599: 3}
    assert set(s.ranks["source"]) == {"nccl"}  # (none numbered by order)


def test_a_peer_named_in_a_ranked_file_is_not_a_rank_of_that_file(tmp_path):
    """A rank's own log (its prefix names it) quoting `Duplicate GPU detected : rank 1 and rank 0 ...`:
    the file stays rank 1's (ingest ties a file of one rank to it); the peer is spoken of, not seen."""
    path = tmp_path / "rank1.log"
    path.write_text("[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage\n"
                    "[rank1]: Last error:\n[rank1]: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10\n")
    assert ranks(ingest([path])) == [1]


def test_a_host_the_user_redacted_is_a_host():
    """dv2-005: `<cluster_name>:920:1145 [1] NCCL INFO Channel 04/0 : 9[1] -> 10[2] via P2P/IPC/read`: ranks 8
    and 9 from their connections, 11 from its proxy thread, one host; the transport error is read."""
    s = one("dv2-005")
    assert ranks(s) == [8, 9, 11] and s.ranks["host"].unique().to_list() == ["<cluster_name>"]
    assert decide(s).kind == Kind.TRANSPORT_ERROR
