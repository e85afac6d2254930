# bash completion for qkv                                   -*- shell-script -*-
# Installed as share/bash-completion/completions/qkv. Completes subcommands,
# options, formats, step ids for --steps, and built-in example and lesson names
# (asked of qkv itself: `qkv examples`, `qkv lesson`).
# The options are those of `qkv COMMAND --help`; tests/unit/test_completions.cpp
# checks that every one of them is here.

_qkv_common_options='-f --format -p --precision -s --steps --head --full --color --ascii --brief
    -o --output --force --max-memory --allow-any-path -h --help'
_qkv_steps='inputs positional encoded context queries rotated_queries keys rotated_keys values scores scaled_scores
    position_bias biased_scores masked_scores weights head_output concat output
    grad_output grad_concat grad_head_output grad_weights grad_scaled_scores grad_scores grad_queries grad_keys grad_values
    grad_w_query grad_w_key grad_w_value grad_w_output grad_b_query grad_b_key grad_b_value grad_b_output
    grad_in_proj_weight grad_in_proj_bias grad_out_proj_weight grad_out_proj_bias grad_inputs grad_context'

# The names a list of qkv's prints: `qkv examples` (first column) or `qkv lesson` (after the number).
_qkv_names() {
    "$1" "$2" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ { $1 = $2 } $1 ~ /^[a-z][a-z0-9_-]*$/ { print $1 }'
}

_qkv() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=${COMP_WORDS[COMP_CWORD - 1]}
    local qkv=${COMP_WORDS[0]}
    COMPREPLY=()

    # the subcommand: the first word after qkv that is not an option
    local command='' i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            -*) ;;
            *)
                command=${COMP_WORDS[i]}
                break
                ;;
        esac
    done

    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W '-h --help --version' -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W 'run explain init check worksheet examples lesson bench' -- "$cur")
        fi
        return 0
    fi

    # the value of an option
    case $prev in
        -f | --format)
            if [[ $command == bench ]]; then
                mapfile -t COMPREPLY < <(compgen -W 'text json' -- "$cur")
            elif [[ $command == check ]]; then
                mapfile -t COMPREPLY < <(compgen -W 'text markdown latex html json csv gradescope' -- "$cur")
            elif [[ $command == explain ]]; then
                mapfile -t COMPREPLY < <(compgen -W 'text markdown latex json html' -- "$cur")
            elif [[ $command == lesson ]]; then
                mapfile -t COMPREPLY < <(compgen -W 'text markdown latex html' -- "$cur")
            elif [[ $command == worksheet ]]; then
                mapfile -t COMPREPLY < <(compgen -W 'markdown latex html yaml' -- "$cur")
            else
                mapfile -t COMPREPLY < <(compgen -W 'text markdown latex csv json svg html' -- "$cur")
            fi
            return 0
            ;;
        -s | --steps)
            # a comma-separated list: complete the id after the last comma
            local done_ids=''
            [[ $cur == *,* ]] && done_ids=${cur%,*},
            mapfile -t COMPREPLY < <(compgen -P "$done_ids" -W "$_qkv_steps" -- "${cur##*,}")
            compopt -o nospace 2>/dev/null
            return 0
            ;;
        --color)
            mapfile -t COMPREPLY < <(compgen -W 'auto always never' -- "$cur")
            return 0
            ;;
        --mask)
            mapfile -t COMPREPLY < <(compgen -W 'causal' -- "$cur")
            return 0
            ;;
        --scale)
            mapfile -t COMPREPLY < <(compgen -W 'sqrt_dk none' -- "$cur")
            return 0
            ;;
        -o | --output | --answers | --rubric)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            compopt -o filenames 2>/dev/null
            return 0
            ;;
        -p | --precision | --head | --max-memory | --block-size | --tolerance | --decimals | --tokens | --d-model | --d-k | \
            --d-v | --heads | --kv-heads | --window | --seed | --student | --max-int | --repeat | --threads | --page | \
            --label-prefix)
            return 0
            ;;
    esac

    local options
    case $command in
        run) options="$_qkv_common_options --standalone --float --label-prefix --dark --decode --backward" ;;
        explain) options="$_qkv_common_options --standalone --block-size --backward" ;;
        check) options="$_qkv_common_options --standalone --answers --tolerance --decimals --rubric --backward" ;;
        lesson) options="$_qkv_common_options --standalone --no-pause --page" ;;
        worksheet) options='-f --format -p --precision -s --steps --head --key --backward --ascii --standalone -o --output --force
            --max-memory --allow-any-path -h --help' ;;
        init) options='--tokens --d-model --d-k --d-v --heads --seed --student --max-int --negative --mask --bias --scale
            -o --output --force -h --help' ;;
        bench) options='--tokens --d-model --heads --kv-heads --window --rope --backward --repeat --threads --max-memory -f --format -h --help' ;;
        examples) options='-h --help' ;;
        *) return 0 ;;
    esac
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
        return 0
    fi

    # the arguments: a YAML file or a built-in name (run, explain, check), a
    # lesson (lesson), then cells (explain: a step id and its [ROW,COL])
    local arguments=0
    for ((i = i + 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            -f | --format | -p | --precision | -s | --steps | --head | --color | -o | --output | --max-memory | \
                --block-size | --answers | --tolerance | --decimals | --rubric | --page) ((i++)) ;;
            -*) ;;
            *) ((arguments++)) ;;
        esac
    done
    case $command in
        run | explain | check | worksheet)
            if ((arguments == 0)); then
                mapfile -t COMPREPLY < <(
                    compgen -W "$(_qkv_names "$qkv" examples) -" -- "$cur"
                    compgen -f -X '!*.yaml' -- "$cur"
                    compgen -f -X '!*.yml' -- "$cur"
                    compgen -d -- "$cur"
                )
                compopt -o filenames 2>/dev/null
            elif [[ $command == explain ]]; then
                mapfile -t COMPREPLY < <(compgen -S '[' -W "$_qkv_steps" -- "$cur")
                compopt -o nospace 2>/dev/null
            fi
            ;;
        lesson)
            if ((arguments == 0)); then
                mapfile -t COMPREPLY < <(
                    compgen -W "$(_qkv_names "$qkv" lesson)" -- "$cur"
                    compgen -f -X '!*.yaml' -- "$cur"
                    compgen -f -X '!*.yml' -- "$cur"
                    compgen -d -- "$cur"
                )
                compopt -o filenames 2>/dev/null
            fi
            ;;
    esac
    return 0
}
complete -F _qkv qkv
