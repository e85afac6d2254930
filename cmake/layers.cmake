# The folders of src/ and the folders each may include from, lowest layer
# first (ARCHITECTURE.md shows the same list). The build makes one library per
# folder that links the libraries it may use, and the test "every file includes
# only from the folders its folder may use" (tests/check_layers.cmake) reads
# this list. cli/ is the command on top of them all.
set(QKV_LAYERS base builtin model attention render explain check lesson io)
set(QKV_USES_base      "")
set(QKV_USES_builtin   "")
set(QKV_USES_model     base)
set(QKV_USES_attention model base)
set(QKV_USES_render    attention model base)
set(QKV_USES_explain   render attention model base)
set(QKV_USES_check     render attention model base)
set(QKV_USES_lesson    check explain render attention model base)
set(QKV_USES_io        check lesson attention model builtin base)
set(QKV_USES_cli       io lesson check explain render attention model builtin base)
# Only the reading of files sees YAML.
set(QKV_YAML_FOLDERS io)
