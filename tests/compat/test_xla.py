"""XlaCallModule: the kernel's checks at the first run, judged from the node's attrs and
the measured table (worker/catalog/data/xla_call_module.json)."""

from __future__ import annotations

import base64

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.model.artifact import Artifact, Edge, Graph, NodeKind, VersionDef
from worker.model.consumer import Loader
from worker.model.findings import Code, FixKind, Stage
from worker.model.xla import module_header, stablehlo_stamp, xla_module
from worker.notify.fixes import fix_text


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def module_bytes(stamp: str) -> bytes:
    """A portable artifact's header as serializePortableArtifact writes it (bytecode
    version 6 as a one-byte varint), then some body."""
    return b"ML\xefR\r" + f"StableHLO_v{stamp}".encode() + b"\x00" + b"\x01\x19\x05" * 50


def xla_graph(
    version: int = 5,
    platforms: tuple[str, ...] = ("CPU",),
    disabled: tuple[str, ...] = (),
    stamp: str = "0.9.0",
) -> Artifact:
    attrs = {
        "version": {"i": version},
        "module": {"s": b64(module_header(module_bytes(stamp)))},
        "Sout": {"list": {"shape": [{"dim": [{"size": "2"}]}]}},
        "Tout": {"list": {"type": ["DT_FLOAT"]}},
        "Tin": {"list": {"type": ["DT_FLOAT"]}},
        "dim_args_spec": {"list": {}},
        "platforms": {"list": {"s": [b64(p.encode()) for p in platforms]}},
        "disabled_checks": {"list": {"s": [b64(d.encode()) for d in disabled]}},
    }
    if not platforms:
        attrs["platforms"] = {"list": {}}
    graph = Graph(
        versions=VersionDef(producer=1700),
        node_count=2,
        kinds=(
            NodeKind("Placeholder", {"dtype": {"type": "DT_FLOAT"}}, 0, 1, "x"),
            NodeKind("XlaCallModule", attrs, 1, 1, "jax_call"),
        ),
        edges=(Edge(0, 0, 1, 0),),
    )
    return Artifact(path="frozen.pb", format="graphdef", size=1, sha256="0", graph=graph)


def verdict(artifact: Artifact, release: str):  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    return check_artifact(artifact, catalog.consumer(release, Loader.GRAPH_IMPORT), catalog)


def xla_errors(artifact: Artifact, release: str) -> list[tuple[str, str | None]]:
    v = verdict(artifact, release)
    return [(f.code, f.stage) for f in v.findings if f.code.startswith("xla.")]


# The bytecode header: the stamp the deserializer compares with its own version.
@pytest.mark.parametrize(
    ("data", "stamp"),
    [
        (module_bytes("1.8.5"), "1.8.5"),
        (b"ML\xefR\x01StableHLO_v0.9.0\x00\x01\x17", "0.9.0"),
        (b"module @m { func.func public @main() { return } }", None),  # MLIR text
        (b"ML\xefR\x01MLIR19.0.0git\x00", None),  # bytecode from another producer
        (b"ML\xefR", None),  # truncated
        (b"", None),
    ],
)
def test_stablehlo_stamp_reads_the_bytecode_producer(data: bytes, stamp: str | None) -> None:
    assert stablehlo_stamp(data) == stamp


def test_the_summary_keeps_the_header_only() -> None:
    data = module_bytes("1.2.3")
    assert module_header(data) == data[: data.index(b"\x00") + 1]
    assert stablehlo_stamp(module_header(data)) == "1.2.3"


def test_xla_module_reads_the_attrs() -> None:
    graph = xla_graph(9, ("CUDA", "CPU"), ("platform",), "1.0.0").graph
    assert graph is not None
    module = xla_module(graph.kinds[1].attrs)
    assert (module.version, module.platforms, module.disabled_checks, module.stamp) == (
        9, ("CUDA", "CPU"), ("platform",), "1.0.0",
    )  # fmt: skip


# (attrs, release) -> the xla errors, each at the first request (the load succeeds)
REQUEST = Stage.REQUEST
CASES = [
    # version: 2.13 runs 4-5, 2.15 4-8, 2.16 4-9 (measured)
    (dict(version=5), "2.13", []),
    (dict(version=6), "2.13", [(Code.XLA_MODULE_VERSION, REQUEST)]),
    (dict(version=8), "2.15", []),
    (dict(version=9), "2.15", [(Code.XLA_MODULE_VERSION, REQUEST)]),
    (dict(version=9), "2.16", []),
    (dict(version=3), "2.16", [(Code.XLA_MODULE_VERSION, REQUEST)]),
    # platforms: CPU must be among them, as jax spells it; disabled_checks lifts it from 2.14
    (dict(platforms=("CUDA",)), "2.15", [(Code.XLA_PLATFORM, REQUEST)]),
    (dict(platforms=("cpu",)), "2.15", [(Code.XLA_PLATFORM, REQUEST)]),
    (dict(platforms=("CUDA", "CPU")), "2.15", []),
    (dict(platforms=("CUDA",), disabled=("platform",)), "2.15", []),
    (dict(platforms=("CUDA",), disabled=("platform",)), "2.13", [(Code.XLA_PLATFORM, REQUEST)]),
    # an empty list: fine at 5, refused from version 6
    (dict(version=5, platforms=()), "2.15", []),
    (dict(version=8, platforms=()), "2.15", [(Code.XLA_PLATFORM, REQUEST)]),
    # StableHLO stamps: 2.13 reads up to 0.11.x, 2.15 up to 0.14.x
    (dict(stamp="0.11.5"), "2.13", []),
    (dict(stamp="0.12.0"), "2.13", [(Code.XLA_STABLEHLO, REQUEST)]),
    (dict(stamp="0.15.0"), "2.15", [(Code.XLA_STABLEHLO, REQUEST)]),
    (dict(stamp="0.15.0"), "2.16", []),
    # 2.16-2.18 read no module of jax's math ops stamped 1.9.0+, 2.19 none from 1.10.0
    (dict(stamp="1.10.6"), "2.16", [(Code.XLA_STABLEHLO, REQUEST)]),
    (dict(stamp="1.10.6"), "2.19", [(Code.XLA_STABLEHLO, REQUEST)]),
    (dict(stamp="1.9.5"), "2.19", []),
    (dict(stamp="1.10.6"), "2.20", []),
]  # fmt: skip


# Two checks failing at once: the first one each release meets (measured) is what every
# request reports, so it comes first.
ORDER = [
    (dict(version=9, platforms=("CUDA",)), "2.13", [Code.XLA_PLATFORM, Code.XLA_MODULE_VERSION]),
    (dict(version=9, platforms=("CUDA",)), "2.15", [Code.XLA_MODULE_VERSION, Code.XLA_PLATFORM]),
    (dict(version=9, stamp="1.10.6"), "2.15", [Code.XLA_STABLEHLO, Code.XLA_MODULE_VERSION]),
    (dict(version=10, stamp="1.10.6"), "2.19", [Code.XLA_MODULE_VERSION, Code.XLA_STABLEHLO]),
]  # fmt: skip


@pytest.mark.parametrize(("attrs", "release", "expected"), ORDER)
def test_the_check_the_release_meets_first_comes_first(
    attrs: dict[str, object], release: str, expected: list[str]
) -> None:
    found = [code for code, _ in xla_errors(xla_graph(**attrs), release)]  # type: ignore[arg-type]
    assert found == expected


@pytest.mark.parametrize(("attrs", "release", "expected"), CASES)
def test_what_the_kernel_refuses_at_the_first_run(
    attrs: dict[str, object], release: str, expected: list[tuple[str, str]]
) -> None:
    assert xla_errors(xla_graph(**attrs), release) == expected  # type: ignore[arg-type]


def test_a_refused_module_loads_and_serves_nothing() -> None:
    v = verdict(xla_graph(version=9), "2.15")
    assert (v.loads, v.serves) == (True, False)


def test_the_version_fix_names_the_newest_version_and_the_first_release() -> None:
    v = verdict(xla_graph(version=9), "2.15")
    (finding,) = [f for f in v.findings if f.code == Code.XLA_MODULE_VERSION]
    assert finding.fix is not None and finding.fix.kind == FixKind.REEXPORT_XLA
    assert (finding.fix.value, finding.fix.release) == ("8", "2.16.2")
    assert "Must be <= 8" in finding.message
    text = fix_text(finding.fix.to_json(), "tf-2.15.1")
    assert "version 8" in text and ">= 2.16.2" in text


def test_the_platform_fix_says_cpu() -> None:
    v = verdict(xla_graph(platforms=("CUDA",)), "2.15")
    (finding,) = [f for f in v.findings if f.code == Code.XLA_PLATFORM]
    assert finding.fix is not None and finding.fix.value == "cpu"
    assert "not among the platforms required by the module: [CUDA]" in finding.message


def test_a_gpu_consumer_is_not_judged_for_cpu() -> None:
    catalog = load_catalog()
    consumer = catalog.consumer("2.15", Loader.GRAPH_IMPORT)
    from dataclasses import replace

    gpu = replace(consumer, gpu=True)
    v = check_artifact(xla_graph(platforms=("CUDA",)), gpu, catalog)
    assert not [f for f in v.findings if f.code == Code.XLA_PLATFORM]


def test_an_unmeasured_release_with_the_op_serves_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # every release with the op is measured now: take 2.11's table away
    catalog = load_catalog()
    measured = catalog.xla_call_module
    monkeypatch.setattr(
        catalog, "xla_call_module", lambda r: None if r.startswith("2.11") else measured(r)
    )
    v = check_artifact(xla_graph(), catalog.consumer("2.11", Loader.GRAPH_IMPORT), catalog)
    codes = [f.code for f in v.findings]
    if Code.OP_NOT_REGISTERED in codes:
        pytest.skip("2.11's registry lacks XlaCallModule")
    assert Code.XLA_UNMEASURED in codes
    assert v.loads is True and v.serves is None


def test_releases_that_read_no_bytecode_refuse_every_stamped_module() -> None:
    # 2.12 parses MLIR text only (measured: "Cannot deserialize computation"); its op has
    # no platforms attr, so platforms are ignored there
    assert xla_errors(xla_graph(version=9, platforms=("CUDA",)), "2.12") == [
        (Code.XLA_STABLEHLO, REQUEST)
    ]


def test_the_reader_keeps_a_real_module_as_its_stamp() -> None:
    from tests.truth import XLA
    from worker.formats.read import read_path

    (artifact,) = read_path(str(XLA / "artifacts" / "jax0.6.2-tf2.19" / "cuda_only"))
    kinds = [k for m in artifact.meta_graphs for k in m.graph.kinds if k.op == "XlaCallModule"]
    assert kinds
    for kind in kinds:
        raw = base64.b64decode(kind.attrs["module"]["s"])
        assert len(raw) <= 64 and raw.endswith(b"\x00")
        module = xla_module(kind.attrs)
        assert (module.version, module.platforms, module.stamp) == (9, ("CUDA",), "1.10.6")


def test_a_gpu_consumer_of_a_module_lowered_for_the_cpu_only_is_unknown() -> None:
    # placed on the GPU, the kernel checks the module's platforms against CUDA; measured
    # on CPU builds only, so neither 'serves' nor 'fails'
    from dataclasses import replace

    catalog = load_catalog()
    gpu = replace(catalog.consumer("2.19", Loader.GRAPH_IMPORT), gpu=True)
    v = check_artifact(xla_graph(version=9, platforms=("CPU",)), gpu, catalog)
    (finding,) = [f for f in v.findings if f.code.startswith("xla.")]
    assert finding.code == Code.XLA_UNMEASURED and "CUDA" in finding.message
    assert (v.loads, v.serves) == (True, None)
    assert "`cuda` among the platforms" in fix_text(finding.fix.to_json(), "the consumer")
    both = check_artifact(xla_graph(version=9, platforms=("CPU", "CUDA")), gpu, catalog)
    assert both.serves is True
    lifted = xla_graph(version=9, platforms=("CPU",), disabled=("platform",))
    assert check_artifact(lifted, gpu, catalog).serves is True
