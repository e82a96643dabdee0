"""The batch command line (`python -m polars_sdca fit | predict`): per-group models from files,
failed groups, the predict join, exit codes and the progress line."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_series_equal

import polars_sdca as ps
from polars_sdca.cli import main


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(*argv: str | Path, stderr: io.StringIO | None = None) -> tuple[int, str]:
    log = io.StringIO() if stderr is None else stderr
    code = main([str(a) for a in argv], stderr=log)
    return code, log.getvalue()


def _groups(n_groups: int, rows: int, seed: int = 0) -> pl.DataFrame:
    """``rows`` rows per entity, two features, labels from a per-entity planted model; half
    of each group's labels are 1 (the rows with the larger score), so every group has both
    classes."""
    rng = np.random.default_rng(seed)
    entity = np.repeat(np.arange(n_groups), rows)
    x = rng.normal(size=(n_groups * rows, 2))
    score = np.einsum("ij,ij->i", x, rng.normal(size=(n_groups, 2))[entity])
    frame = pl.DataFrame({"entity": entity, "f1": x[:, 0], "f2": x[:, 1], "score": score})
    return frame.with_columns(
        y=(pl.col("score").rank("ordinal").over("entity") > rows // 2).cast(pl.Int64)
    ).drop("score")


@pytest.mark.slow
def test_fit_10000_groups_from_parquet_with_failing_groups(tmp_path: Path) -> None:
    frame = _groups(10_000, 6)
    # entity 17 has one class, entity 4242 a NaN feature: both fail, the job goes on
    frame = frame.with_columns(
        y=pl.when(pl.col("entity") == 17).then(1).otherwise("y"),
        f2=pl.when(pl.int_range(pl.len()) == 4242 * 6).then(float("nan")).otherwise("f2"),
    )
    frame.write_parquet(tmp_path / "data.parquet")
    out = tmp_path / "models.parquet"
    code, log = run(
        "fit", "--input", tmp_path / "data.parquet", "--label", "y", "--features", "f1,f2",
        "--group-by", "entity", "--loss", "logistic", "--l2", "1e-2", "--output", out,
    )  # fmt: skip
    assert code == 1
    models = pl.read_parquet(out)
    assert models.height == 10_000
    assert models["entity"].to_list() == list(range(10_000))
    status = models["model"].struct.field("status")
    failed = models.filter(status != "ok")
    assert failed["entity"].to_list() == [17, 4242]
    assert failed["model"].struct.field("coef").is_null().all()
    assert failed["model"].struct.field("status").to_list()[0].startswith('column "y": all labels are +1')
    assert "row 0: feature value NaN is not finite" in failed["model"].struct.field("status").to_list()[1]
    assert models["model"].struct.field("converged").sum() == 9_998
    assert "fit: 10,000 groups" in log
    assert "9,998 fitted (0 not converged), 2 failed" in log
    assert "entity=17: column" in log
    assert "entity=4242: column" in log
    assert "\r" not in log  # not a terminal: no progress line
    # a group's row is the plugin's own fit of that group
    direct = frame.filter(pl.col("entity") == 123).select(ps.fit("y", ["f1", "f2"], l2=1e-2).alias("m"))
    assert models.filter(pl.col("entity") == 123)["model"][0]["coef"] == direct.item()["coef"]


@pytest.fixture
def fitted(tmp_path: Path) -> tuple[Path, Path, pl.DataFrame]:
    frame = _groups(5, 12, seed=1).with_columns(pl.col("entity").cast(pl.String))
    frame = frame.with_columns(y=pl.when(pl.col("entity") == "3").then(0).otherwise("y"))
    data, models = tmp_path / "data.csv", tmp_path / "models.parquet"
    frame.write_csv(data)
    code, _ = run(
        "fit", "--input", data, "--label", "y", "--features", "f1,f2", "--group-by", "entity",
        "--l2", "0.05", "--output", models, "--batch-size", "2",
    )  # fmt: skip
    assert code == 1  # entity 3 has one class
    return data, models, frame


@pytest.mark.parametrize("kind", ["decision", "class", "proba"])
def test_predict_joins_models_back_by_key(fitted: tuple[Path, Path, pl.DataFrame], kind: str) -> None:
    data, models, _ = fitted
    out = data.with_name(f"pred-{kind}.parquet")
    code, log = run(
        "predict", "--input", data, "--models", models, "--features", "f1,f2", "--group-by", "entity",
        "--kind", kind, "--output", out,
    )  # fmt: skip
    assert code == 1
    assert "predict: 60 rows, 12 without a prediction" in log
    got = pl.read_parquet(out)
    assert got.columns == [*pl.read_csv(data).columns, "prediction"]
    expected = (
        pl.read_csv(data)
        .join(pl.read_parquet(models), on="entity", how="left", maintain_order="left")
        .select(ps.predict("model", ["f1", "f2"], kind=kind).alias("prediction"))
        .to_series()
    )
    assert_series_equal(got["prediction"], expected)
    assert got.filter(pl.col("entity") == 3)["prediction"].is_null().all()
    assert got.filter(pl.col("entity") != 3)["prediction"].is_not_null().all()


def test_ungrouped_fit_broadcasts_one_model_to_csv(tmp_path: Path) -> None:
    frame = _groups(1, 40, seed=2).drop("entity")
    frame.write_parquet(tmp_path / "data.parquet")
    models, out = tmp_path / "model.parquet", tmp_path / "scores.csv"
    assert run("fit", "--input", tmp_path / "data.parquet", "--label", "y", "--features", "f1,f2",
               "--output", models)[0] == 0  # fmt: skip
    model = pl.read_parquet(models)
    assert model.columns == ["model"]
    assert model.height == 1
    code, log = run("predict", "--input", tmp_path / "data.parquet", "--models", models,
                    "--features", "f1,f2", "--kind", "class", "--keep", "y", "--column", "yhat",
                    "--output", out)  # fmt: skip
    assert code == 0, log
    scores = pl.read_csv(out)
    assert scores.columns == ["y", "yhat"]
    direct = frame.select(ps.fit("y", ["f1", "f2"]).alias("m"))
    assert (
        scores["yhat"].to_list()
        == frame.select(ps.predict(direct, ["f1", "f2"], kind="class")).to_series().to_list()
    )


def test_sparse_features_and_options(tmp_path: Path) -> None:
    frame = _groups(3, 30, seed=3).select(
        "entity",
        "y",
        features=pl.concat_list(
            pl.struct(index=pl.lit(0, pl.UInt32), value="f1"),
            pl.struct(index=pl.lit(4, pl.UInt32), value="f2"),
        ),
    )
    frame.write_parquet(tmp_path / "sparse.parquet")
    out = tmp_path / "models.parquet"
    code, _ = run("fit", "--input", tmp_path / "sparse.parquet", "--label", "y", "--sparse", "features",
                  "--group-by", "entity", "--loss", "hinge", "--l2", "0.1", "--n-features", "6",
                  "--no-fit-intercept", "--no-shrinking", "--seed", "5", "--max-epochs", "2000",
                  "--output", out)  # fmt: skip
    assert code == 0
    models = pl.read_parquet(out)
    opts = {
        "loss": "hinge",
        "l2": 0.1,
        "n_features": 6,
        "fit_intercept": False,
        "seed": 5,
        "max_epochs": 2000,
    }
    direct = frame.group_by("entity", maintain_order=True).agg(
        ps.fit("y", "features", shrinking=False, **opts).alias("model")
    )
    shrunk = frame.group_by("entity", maintain_order=True).agg(ps.fit("y", "features", **opts).alias("model"))
    # The flag reached the fit: shrinking (the default) follows another path to the optimum.
    assert (
        models["model"].struct.field("epochs").to_list() != shrunk["model"].struct.field("epochs").to_list()
    )
    assert models["model"].struct.field("coef").to_list() == direct["model"].struct.field("coef").to_list()
    assert models["model"].struct.field("n_features").to_list() == [6, 6, 6]
    assert models["model"].struct.field("intercept").to_list() == [0.0, 0.0, 0.0]


def test_on_error_raise_stops_the_job_without_output(fitted: tuple[Path, Path, pl.DataFrame]) -> None:
    data, _, _ = fitted
    out = data.with_name("never.parquet")
    code, log = run("fit", "--input", data, "--label", "y", "--features", "f1,f2", "--group-by", "entity",
                    "--on-error", "raise", "--output", out)  # fmt: skip
    assert code == 2
    assert "error:" in log
    assert 'column "y": all labels are -1' in log
    assert not out.exists()
    assert not list(out.parent.glob(".*tmp"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--input", "data.txt", "--output", "m.parquet"], "--input data.txt: unknown file type"),
        (["--input", "{data}", "--output", "m.csv"], "--output m.csv: this output needs one of"),
        (["--input", "{data}", "--output", "m.parquet", "--l2", "-1"], "l2"),
        (["--input", "{data}", "--output", "m.parquet", "--batch-size", "0"], "--batch-size must be >= 1"),
        (["--input", "missing.parquet", "--output", "m.parquet"], "missing.parquet"),
    ],
)
def test_bad_arguments_exit_2(
    fitted: tuple[Path, Path, pl.DataFrame], args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _, _ = fitted
    monkeypatch.chdir(data.parent)
    argv = ["fit", "--label", "y", "--features", "f1,f2", *(a.format(data=data) for a in args)]
    code, log = run(*argv)
    assert code == 2
    assert message in log
    assert not (data.parent / "m.parquet").exists()


def test_argparse_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "fit",
                "--input",
                "x.parquet",
                "--label",
                "y",
                "--features",
                "a",
                "--sparse",
                "b",
                "--output",
                "m.parquet",
            ]
        )
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_option_flags_list_their_choices(capsys: pytest.CaptureFixture[str]) -> None:
    """The flags come from the core's option schema: a bad name is refused with the choices."""
    argv = ["fit", "--input", "x.parquet", "--label", "y", "--features", "a", "--output", "m.parquet"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--loss", "nope"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    for part in ("invalid choice: 'nope'", "'logistic'", "'multinomial'"):
        assert part in err
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    help_text = capsys.readouterr().out
    assert "--pdprox-variant {dual,primal}" in help_text
    assert "L2 strength lambda" in help_text
    assert "--max-memory" in help_text


def test_progress_line_on_a_terminal(fitted: tuple[Path, Path, pl.DataFrame]) -> None:
    data, _, _ = fitted
    job = ["fit", "--input", data, "--label", "y", "--features", "f1,f2", "--group-by", "entity",
           "--output", data.with_name("m.parquet")]  # fmt: skip
    code, log = run(*job, "--batch-size", "2", stderr=_Terminal())
    assert code == 1
    lines = log.split("\r")
    assert [line.split(" groups")[0] for line in lines[1:]] == ["fit: 2/5", "fit: 4/5", "fit: 5/5"]
    assert "1 failed" in lines[-1]
    assert "groups/s" in lines[-1]
    code, log = run(*job, "--progress", "never", stderr=_Terminal())
    assert "\r" not in log


def test_python_dash_m_entry_point(fitted: tuple[Path, Path, pl.DataFrame]) -> None:
    data, models, _ = fitted
    out = data.with_name("p.parquet")
    proc: Any = subprocess.run(
        [sys.executable, "-m", "polars_sdca", "predict", "--input", str(data), "--models", str(models),
         "--features", "f1,f2", "--group-by", "entity", "--output", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "without a prediction" in proc.stderr
    assert pl.read_parquet(out).height == 60


def test_cv_fits_each_group_path_and_predicts(tmp_path: Path) -> None:
    frame = _groups(3, 60, seed=5)
    frame.write_parquet(tmp_path / "data.parquet")
    out = tmp_path / "models.parquet"
    code, log = run(
        "fit", "--input", tmp_path / "data.parquet", "--label", "y", "--features", "f1,f2",
        "--group-by", "entity", "--l2", "1e-3", "--cv", "4", "--l1-grid", "0.1,0.01,0.001",
        "--scoring", "accuracy", "--output", out,
    )  # fmt: skip
    assert code == 0, log
    models = pl.read_parquet(out).sort("entity")
    # The same as the expression, group by group: the refit model and the curve.
    want = (
        frame.group_by("entity")
        .agg(ps.fit_cv("y", ["f1", "f2"], l2=1e-3, folds=4, l1=[0.1, 0.01, 0.001], scoring="accuracy"))
        .sort("entity")
    )
    for field in ("mean", "se", "chosen", "values"):
        assert_series_equal(
            models["cv"].struct.field(field), want["y"].struct.field(field), check_names=False
        )
    assert_series_equal(models["model"], want["y"].struct.field("model"), check_names=False)
    assert models["cv"].struct.field("scoring").to_list() == ["accuracy"] * 3
    # predict reads the cross-validated models file as it is.
    code, log = run(
        "predict", "--input", tmp_path / "data.parquet", "--models", out, "--features", "f1,f2",
        "--group-by", "entity", "--output", tmp_path / "p.parquet",
    )  # fmt: skip
    assert code == 0, log


def test_cv_flags_come_from_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from polars_sdca import _internal

    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    help_text = capsys.readouterr().out
    for spec in [*_internal.cv_options(), *_internal.path_options()]:
        flag = "--cv" if spec["name"] == "folds" else f"--{spec['name'].replace('_', '-')}"
        assert flag in help_text, flag
    assert "{auto,log_loss,accuracy,squared_error,absolute_error,hinge}" in help_text.replace("\n", "")
    # A grid without --cv is refused before anything is read.
    code, log = run(
        "fit", "--input", tmp_path / "none.parquet", "--label", "y", "--features", "a",
        "--l1-grid", "0.1,0.01", "--output", tmp_path / "m.parquet",
    )  # fmt: skip
    assert code == 2
    assert "--l1-grid: grid and cross-validation options need --cv K" in log


def test_cv_l1_ratio_list_chooses_the_pair_end_to_end(tmp_path: Path) -> None:
    frame = _groups(3, 60, seed=6)
    frame.write_parquet(tmp_path / "data.parquet")
    job = ("fit", "--input", tmp_path / "data.parquet", "--label", "y", "--features", "f1,f2",
           "--group-by", "entity", "--cv", "4", "--n-l1", "5", "--l1-min-ratio", "0.01")  # fmt: skip
    out = tmp_path / "models.parquet"
    code, log = run(*job, "--l1-ratio", "0.3,1", "--output", out)
    assert code == 0, log
    models = pl.read_parquet(out).sort("entity")
    # The expression with the list, group by group: every curve, the chosen pair and its refit.
    opts: dict[str, Any] = {"folds": 4, "n_l1": 5, "l1_min_ratio": 0.01}
    want = (
        frame.group_by("entity").agg(ps.fit_cv("y", ["f1", "f2"], l1_ratio=[0.3, 1.0], **opts)).sort("entity")
    )
    for field in ("l1_ratio", "values", "mean", "se", "chosen", "best_l1_ratio", "chosen_l1_ratio"):
        assert_series_equal(
            models["cv"].struct.field(field), want["y"].struct.field(field), check_names=False
        )
    assert_series_equal(models["model"], want["y"].struct.field("model"), check_names=False)
    cv = models["cv"].to_list()
    for row, model in zip(cv, models["model"].to_list(), strict=True):
        rho = row["chosen_l1_ratio"]
        assert rho in (0.3, 1.0)
        assert row["l1_ratio"] == [0.3] * 5 + [1.0] * 5
        assert model["l1"] == row["chosen"]
        assert model["l2"] == pytest.approx(model["l1"] * (1 - rho) / rho, rel=1e-15, abs=0.0)
    # One value stays the plain mixing: one path, as fit_cv(l1_ratio=0.5).
    code, log = run(*job, "--l1-ratio", "0.5", "--output", tmp_path / "one.parquet")
    assert code == 0, log
    one = pl.read_parquet(tmp_path / "one.parquet").sort("entity")
    want = frame.group_by("entity").agg(ps.fit_cv("y", ["f1", "f2"], l1_ratio=0.5, **opts)).sort("entity")
    assert_series_equal(one["cv"].struct.field("mean"), want["y"].struct.field("mean"), check_names=False)
    assert set(one["cv"].struct.field("chosen_l1_ratio").to_list()) == {0.5}
    # A value out of range is the plugin's error, naming the option; nothing is written.
    code, log = run(*job, "--l1-ratio", "0.5,0", "--output", tmp_path / "bad.parquet")
    assert code == 2
    assert "l1_ratio" in log
    assert r"must be in (0, 1]" in log
    assert not (tmp_path / "bad.parquet").exists()


def test_l1_ratio_flag_parses_one_number_or_a_list(capsys: pytest.CaptureFixture[str]) -> None:
    from polars_sdca.cli import _parser

    parse = lambda *flags: _parser().parse_args(  # noqa: E731
        ["fit", "--input", "x.parquet", "--label", "y", "--features", "a", "--output", "m.parquet", *flags]
    )
    assert parse("--l1-ratio", "0.5").l1_ratio == 0.5
    assert parse("--l1-ratio", "0.2,0.5,1").l1_ratio == [0.2, 0.5, 1.0]
    assert parse().l1_ratio is None
    with pytest.raises(SystemExit):
        parse("--l1-ratio", "0.5,abc")
    assert "--l1-ratio: expected comma-separated numbers, got '0.5,abc'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse("--l1-ratio", ",")
    assert "expected a number in (0, 1] or comma-separated numbers" in capsys.readouterr().err
