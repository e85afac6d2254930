# fish completion for qkv, installed as share/fish/vendor_completions.d/qkv.fish.
# The options are those of `qkv COMMAND --help` (tests/unit/test_completions.cpp
# checks that every one of them is here); built-in example and lesson names are
# asked of qkv itself.

set -l commands run explain init check worksheet examples lesson bench
set -l steps inputs positional encoded context queries rotated_queries keys rotated_keys values scores \
    scaled_scores position_bias biased_scores masked_scores weights head_output concat output \
    grad_output grad_concat grad_head_output grad_weights grad_scaled_scores grad_scores grad_queries grad_keys grad_values \
    grad_w_query grad_w_key grad_w_value grad_w_output grad_b_query grad_b_key grad_b_value grad_b_output \
    grad_in_proj_weight grad_in_proj_bias grad_out_proj_weight grad_out_proj_bias grad_inputs grad_context

function __qkv_examples
    qkv examples 2>/dev/null | string replace -r '^(\S+)\s+(.*)$' '$1\t$2'
end

function __qkv_lessons
    qkv lesson 2>/dev/null | string replace -rf '^\s*\d+\s+(\S+)\s+(.*)$' '$1\t$2'
end

# the ids already written before the last comma, then each step id
function __qkv_steps
    set -l token (commandline -ct)
    set -l done (string replace -r '[^,]*$' '' -- $token)
    for id in $argv
        echo $done$id
    end
end

complete -c qkv -f
complete -c qkv -n "not __fish_seen_subcommand_from $commands" -l version -d 'Print the version'
complete -c qkv -s h -l help -d 'Print help'

complete -c qkv -n "not __fish_seen_subcommand_from $commands" -a run -d 'Compute and print every step of attention'
complete -c qkv -n "not __fish_seen_subcommand_from $commands" -a explain -d 'Show the arithmetic behind cells'
complete -c qkv -n "not __fish_seen_subcommand_from $commands" -a init -d 'Write a starter example'
complete -c qkv -n "not __fish_seen_subcommand_from $commands" -a check -d 'Grade hand-calculated answers'
complete -c qkv -n "not __fish_seen_subcommand_from $commands" -a worksheet -d 'Write an exercise sheet, or its answer key'
complete -c qkv -n "not __fish_seen_subcommand_from $commands" -a examples -d 'List the built-in examples'
complete -c qkv -n "not __fish_seen_subcommand_from $commands" -a lesson -d 'List the lessons, or play one'
complete -c qkv -n "not __fish_seen_subcommand_from $commands" -a bench -d 'Time every step on random data'

# run, explain, check and lesson share these; worksheet takes some of them
set -l common "__fish_seen_subcommand_from run explain check lesson"
set -l with_worksheet "__fish_seen_subcommand_from run explain check lesson worksheet"
set -l with_latex "__fish_seen_subcommand_from run explain check lesson worksheet"
complete -c qkv -n "__fish_seen_subcommand_from run" -s f -l format -x -a 'text markdown latex csv json svg html' -d 'Output format'
complete -c qkv -n "__fish_seen_subcommand_from explain" -s f -l format -x -a 'text markdown latex json html' -d 'Output format'
complete -c qkv -n "__fish_seen_subcommand_from check" -s f -l format -x -a 'text markdown latex html json csv gradescope' -d 'Output format'
complete -c qkv -n "__fish_seen_subcommand_from lesson" -s f -l format -x -a 'text markdown latex html' -d 'Output format'
complete -c qkv -n "__fish_seen_subcommand_from worksheet" -s f -l format -x -a 'markdown latex html yaml' -d 'Output format'
complete -c qkv -n $with_worksheet -s p -l precision -x -d 'Digits after the decimal point (0-17)'
complete -c qkv -n $with_worksheet -s s -l steps -x -a "(__qkv_steps $steps)" -d 'Only these steps (comma-separated ids)'
complete -c qkv -n $with_worksheet -l head -x -d 'Only head N (1-based)'
complete -c qkv -n $common -l full -d 'Show large matrices whole'
complete -c qkv -n $common -l color -x -a 'auto always never' -d 'Colour'
complete -c qkv -n $with_worksheet -l ascii -d 'ASCII only'
complete -c qkv -n $common -l brief -d 'Formulas, tables and notes; no explanations'
complete -c qkv -n $with_latex -l standalone -d 'LaTeX: a whole document, not a fragment'
complete -c qkv -n "__fish_seen_subcommand_from run" -l dark -d 'SVG: for a dark page'
complete -c qkv -n "__fish_seen_subcommand_from run" -l float -d 'LaTeX: each table in a table float'
complete -c qkv -n "__fish_seen_subcommand_from run" -l label-prefix -x -d 'LaTeX: label the floats PREFIX:STEP'
complete -c qkv -n $with_worksheet -s o -l output -r -F -d 'Write to FILE instead of standard output'
complete -c qkv -n $with_worksheet -l force -d 'Let -o replace an existing file'
complete -c qkv -n $with_worksheet -l max-memory -x -d 'Memory limit for the computation (default 4GiB)'
complete -c qkv -n $with_worksheet -l allow-any-path -d "Let {file: ...} read outside the example's folder"

# the example: a built-in name or a YAML file
complete -c qkv -n "__fish_seen_subcommand_from run explain check worksheet" -a '(__qkv_examples)' -F

complete -c qkv -n "__fish_seen_subcommand_from run" -l decode -d 'One new token at a time, from a key/value cache'
complete -c qkv -n "__fish_seen_subcommand_from run explain check worksheet" -l backward -d 'Add the gradients (grad_output: ones unless given)'
complete -c qkv -n "__fish_seen_subcommand_from worksheet" -l key -d 'Fill the tables with the true values: the answer key'
complete -c qkv -n "__fish_seen_subcommand_from explain" -l block-size -x -d 'Work the row out as FlashAttention does'
complete -c qkv -n "__fish_seen_subcommand_from check" -l answers -r -F -d 'Answers from FILE, or a folder of them'
complete -c qkv -n "__fish_seen_subcommand_from check" -l tolerance -x -d 'Right when within T of the true value'
complete -c qkv -n "__fish_seen_subcommand_from check" -l decimals -x -d 'The fewest decimals an answer may carry'
complete -c qkv -n "__fish_seen_subcommand_from check" -l rubric -r -F -d 'Points per step from FILE'

complete -c qkv -n "__fish_seen_subcommand_from lesson" -a '(__qkv_lessons)' -F
complete -c qkv -n "__fish_seen_subcommand_from lesson" -l no-pause -d 'Play straight through, answers shown'
complete -c qkv -n "__fish_seen_subcommand_from lesson" -l page -x -d 'Start at this page'

complete -c qkv -n "__fish_seen_subcommand_from init bench" -l tokens -x -d 'Number of tokens'
complete -c qkv -n "__fish_seen_subcommand_from init bench" -l d-model -x -d 'Width d_model'
complete -c qkv -n "__fish_seen_subcommand_from init bench" -l heads -x -d 'Number of heads'
complete -c qkv -n "__fish_seen_subcommand_from init" -l d-k -x -d 'Width of queries and keys, per head'
complete -c qkv -n "__fish_seen_subcommand_from init" -l d-v -x -d 'Width of values, per head'
complete -c qkv -n "__fish_seen_subcommand_from init" -l seed -x -d 'Seed: the same seed gives the same file'
complete -c qkv -n "__fish_seen_subcommand_from init" -l student -x -d 'An exercise for this student: the seed comes from the ID'
complete -c qkv -n "__fish_seen_subcommand_from init" -l max-int -x -d 'Largest number drawn, from 1 to 9'
complete -c qkv -n "__fish_seen_subcommand_from init" -l negative -d 'Draw numbers from -M to M instead of 0 to M'
complete -c qkv -n "__fish_seen_subcommand_from init" -l mask -x -a causal -d 'Mask: token i attends only to tokens 1 ... i'
complete -c qkv -n "__fish_seen_subcommand_from init" -l bias -d 'Add the biases b_Q, b_K, b_V (and b_O)'
complete -c qkv -n "__fish_seen_subcommand_from init" -l scale -x -a 'sqrt_dk none' -d 'Divide the scores by sqrt(d_k), or not'
complete -c qkv -n "__fish_seen_subcommand_from init" -s o -l output -r -F -d 'Write to FILE instead of standard output'
complete -c qkv -n "__fish_seen_subcommand_from init" -l force -d 'Let -o replace an existing file'

complete -c qkv -n "__fish_seen_subcommand_from bench" -l kv-heads -x -d 'Key/value heads G, dividing H'
complete -c qkv -n "__fish_seen_subcommand_from bench" -l window -x -d 'Sliding-window causal mask of W keys'
complete -c qkv -n "__fish_seen_subcommand_from bench" -l rope -d 'Rotate queries and keys by RoPE'
complete -c qkv -n "__fish_seen_subcommand_from bench" -l backward -d 'Time the backward pass too'
complete -c qkv -n "__fish_seen_subcommand_from bench" -l repeat -x -d 'Timed runs, after one warm-up'
complete -c qkv -n "__fish_seen_subcommand_from bench" -l threads -x -d 'Threads sharing every step'
complete -c qkv -n "__fish_seen_subcommand_from bench" -l max-memory -x -d 'Memory limit for the benchmark'
complete -c qkv -n "__fish_seen_subcommand_from bench" -s f -l format -x -a 'text json' -d 'Output format'
