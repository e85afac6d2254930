# qkv's source files, by folder of src/: the native build (CMakeLists.txt)
# and the WebAssembly build of the playground (web/CMakeLists.txt) both
# compile these lists, so that the page runs the same code as the command.
# (tests/check_sources.cmake finds a .cpp file that no list names.)
set(QKV_SOURCES_base src/base/diagnostics.cpp src/base/expression.cpp src/base/numbers.cpp src/base/utf8.cpp)
set(QKV_SOURCES_builtin src/builtin/builtin.cpp)
set(QKV_SOURCES_model src/model/keys.cpp src/model/model.cpp)
set(QKV_SOURCES_attention src/attention/attention.cpp src/attention/bench.cpp src/attention/blas.cpp
    src/attention/cell.cpp src/attention/cpu_targets.cpp src/attention/divisor.cpp src/attention/decode.cpp
    src/attention/engine.cpp src/attention/engine_parts.cpp src/attention/engine_setup.cpp src/attention/kernels.cpp
    src/attention/engine_backward.cpp src/attention/steps.cpp src/attention/steps_backward.cpp src/attention/steps_backward_words.cpp
    src/attention/steps_given.cpp src/attention/steps_mla.cpp src/attention/steps_mla_backward.cpp src/attention/steps_read.cpp src/attention/trace.cpp
    src/attention/worker_pool.cpp)
set(QKV_SOURCES_render src/render/csv.cpp src/render/decode.cpp src/render/decode_json.cpp src/render/html.cpp
    src/render/formats.cpp src/render/json.cpp src/render/latex.cpp src/render/latex_text.cpp src/render/latex_cell.cpp
    src/render/markdown.cpp src/render/render.cpp src/render/svg.cpp src/render/table.cpp src/render/text.cpp
    src/render/worksheet.cpp src/render/document_html.cpp src/render/document_latex.cpp src/render/document.cpp
    src/render/document_text.cpp src/render/worksheet_yaml.cpp src/render/latex_working.cpp)
set(QKV_SOURCES_explain src/explain/backward.cpp src/explain/backward_weights.cpp src/explain/explain.cpp src/explain/explain_scores.cpp src/explain/formats.cpp
    src/explain/numbers.cpp src/explain/online.cpp src/explain/operands.cpp)
set(QKV_SOURCES_check src/check/catalogue.cpp src/check/check.cpp src/check/class_report.cpp
    src/check/exercise.cpp src/check/diagnose.cpp src/check/mistakes_projections.cpp src/check/mistakes_scores.cpp
    src/check/mistakes_output.cpp src/check/mistakes_backward.cpp
    src/check/recompute.cpp src/check/report.cpp src/check/report_json.cpp)
set(QKV_SOURCES_lesson src/lesson/document_skin.cpp src/lesson/given.cpp src/lesson/grading.cpp
    src/lesson/lesson.cpp src/lesson/player.cpp src/lesson/prepare.cpp src/lesson/script.cpp
    src/lesson/text_skin.cpp src/lesson/writer.cpp)
set(QKV_SOURCES_io src/io/answers.cpp src/io/lesson_find.cpp src/io/lesson_loader.cpp src/io/loader.cpp
    src/io/loader_inputs.cpp src/io/loader_mla.cpp src/io/loader_settings.cpp src/io/loader_variants.cpp src/io/loader_weights.cpp
    src/io/matrix_source.cpp src/io/rubric.cpp src/io/tensor_file.cpp src/io/yaml_util.cpp src/io/yaml_writer.cpp)
# The command line's table (cli/flags.hpp) and what is written from it, for
# the command and for the tests that read the table.
set(QKV_SOURCES_cli_table src/cli/flags.cpp src/cli/command_setup.cpp src/cli/man_page.cpp
    src/cli/completions.cpp)
# The commands.
set(QKV_SOURCES_cli src/cli/bench.cpp src/cli/check.cpp src/cli/common.cpp src/cli/examples.cpp
    src/cli/explain.cpp src/cli/init.cpp src/cli/lesson.cpp src/cli/main.cpp src/cli/output.cpp src/cli/run.cpp
    src/cli/generate.cpp src/cli/worksheet.cpp src/cli/playground.cpp)
