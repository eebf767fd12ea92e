"""`attnbench new`'s files: written whole, or not at all."""

import pytest

from attnbench.kernels.starter import write_starter


def test_an_attnbench_toml_that_cannot_be_written_leaves_no_kernel_behind(tmp_path):
    """An unwritable attnbench.toml (here a link to a folder that is not there) left NAME.cu written, and the
    next `new NAME` refused it as already existing."""
    (tmp_path / "attnbench.toml").symlink_to(tmp_path / "gone" / "attnbench.toml")
    with pytest.raises(OSError):
        write_starter("mine", tmp_path)
    assert not (tmp_path / "mine.cu").exists()


def test_both_files_are_written(tmp_path):
    files = write_starter("mine", tmp_path)
    assert files.kernel.read_text().strip() and "[variants.mine]" in files.config.read_text()


def test_a_folder_that_is_a_file_is_one_line_not_a_traceback(tmp_path):
    """From Python, new_kernel("mine", a_file) ended in FileExistsError."""
    from attnbench.kernels.starter import StarterError

    (tmp_path / "taken").write_text("a file")
    with pytest.raises(StarterError, match="taken: cannot hold the new files"):
        write_starter("mine", tmp_path / "taken")


def test_through_a_linked_attnbench_toml_the_new_variant_names_its_kernel_where_it_was_written(tmp_path):
    """A folder whose attnbench.toml is a link to a shared one: `new four` wrote four.cu here and source = "four.cu"
    there, read beside the shared file, so the `run` it printed next said "four.cu: no such file"."""
    from attnbench.kernels.user import find_launch_facts, load_variants

    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "attnbench.toml").write_text("# the lab's variants\n")
    here = tmp_path / "mine"
    here.mkdir()
    (here / "attnbench.toml").symlink_to(tmp_path / "shared" / "attnbench.toml")
    write_starter("four", here)
    assert (here / "attnbench.toml").is_symlink()
    variant = load_variants(find_launch_facts(here))["four"]
    assert variant.source == str((here / "four.cu").resolve())
    assert 'source = "five.cu"' in write_starter("five", tmp_path / "plain").config.read_text()  # unlinked: as ever


def test_a_group_name_is_refused_before_any_file_is_written(tmp_path):
    from attnbench.kernels.starter import StarterError

    for name in ("all", "ladder"):
        with pytest.raises(StarterError, match=f"{name}: names a group of variants"):
            write_starter(name, tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_source_path_is_written_as_a_toml_string_toml_reads_back_whatever_its_characters():
    """Through a linked attnbench.toml the source is a path of any characters: quotes, backslashes, control
    characters and characters past the BMP (a JSON string's surrogate pairs are no valid TOML)."""
    import tomllib

    from attnbench.kernels.starter import toml_string

    for text in ("a.cu", 'dir/x "q" \\ b.cu', "emoji\U0001F600.cu", "ctl\x01\x7f\tx.cu", "\u00fcn\u00ef.cu"):
        assert tomllib.loads(f"k = {toml_string(text)}")["k"] == text
