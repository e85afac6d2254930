// The command line, defined once: each command and each flag a row. Help
// (command_setup.cpp), the man page's options and the shell completions are
// all read from here (flags.hpp says how); a command's file says only where
// each value goes.
#include "cli/flags.hpp"

#include "base/diagnostics.hpp"
#include "explain/explain.hpp"
#include "model/keys.hpp"
#include "model/model.hpp"
#include "render/render.hpp"
#include "render/worksheet.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace qkv::cli {

namespace {

constexpr Commands k_qkv = command_bit(CommandId::qkv);
constexpr Commands k_run = command_bit(CommandId::run);
constexpr Commands k_explain = command_bit(CommandId::explain);
constexpr Commands k_init = command_bit(CommandId::init);
constexpr Commands k_check = command_bit(CommandId::check);
constexpr Commands k_worksheet = command_bit(CommandId::worksheet);
constexpr Commands k_examples = command_bit(CommandId::examples);
constexpr Commands k_lesson = command_bit(CommandId::lesson);
constexpr Commands k_playground = command_bit(CommandId::playground);
constexpr Commands k_bench = command_bit(CommandId::bench);
constexpr Commands k_generate = command_bit(CommandId::generate);
// the commands that show an example's steps, and share most of their options
constexpr Commands k_shows = k_run | k_explain | k_check | k_lesson;
constexpr Commands k_every = k_qkv | k_run | k_explain | k_init | k_check | k_worksheet | k_examples | k_lesson |
                             k_playground | k_bench | k_generate;

const CommandDef k_commands[] = {
    {.id = CommandId::qkv, .name = "qkv",
     .help = "qkv: self-attention, step by step: compute, explain and check it by hand"},
    {.id = CommandId::run, .name = "run", .help = "Compute and print every step of attention",
     .writes = Writer::run},
    {.id = CommandId::explain, .name = "explain",
     .help = "Show the arithmetic behind cells, e.g. scores[1,2] or output[1]",
     .writes = Writer::explain},
    {.id = CommandId::init, .name = "init", .help = "Write a starter example with small whole-number weights"},
    {.id = CommandId::check, .name = "check", .help = "Grade hand-calculated answers; exit 1 on any mistake",
     .writes = Writer::check},
    {.id = CommandId::worksheet, .name = "worksheet",
     .help = "Write an exercise sheet to work by hand, or its answer key",
     .writes = Writer::worksheet},
    {.id = CommandId::examples, .name = "examples", .help = "List the built-in examples, or print one's YAML"},
    {.id = CommandId::lesson, .name = "lesson", .help = "List the lessons, or play one",
     .writes = Writer::lesson},
    {.id = CommandId::playground, .name = "playground",
     .help = "Write one offline web page that runs qkv in the browser"},
    {.id = CommandId::bench, .name = "bench", .help = "Time every step, on random data of a given size or an example",
     .writes = Writer::bench},
    {.id = CommandId::generate, .name = "generate",
     .help = "Write the man page or a shell's completions from these definitions (for the build)", .hidden = true},
};

// In the order --help lists them: a command's arguments, then its options as
// they come here.
const Flag k_flags[] = {
    {.name = "file",
     .value = "FILE|NAME|-",
     .commands = k_run | k_explain | k_check | k_worksheet | k_playground | k_bench,
     .help = "Example file, built-in example name, or - for stdin",
     .complete = Complete::example,
     .required = k_explain | k_check | k_worksheet},
    {.name = "name",
     .value = "NAME",
     .commands = k_examples,
     .help = "A built-in example: print its YAML, to start a file of your own from",
     .complete = Complete::example_name},
    {.name = "cells",
     .value = "CELL",
     .commands = k_explain,
     .help = "Cells: STEP[ROW,COL] or STEP[ROW], then @HEAD if needed",
     .complete = Complete::cells,
     .required = k_explain,
     .repeatable = true},
    {.name = "lesson",
     .value = "NUMBER|NAME|FILE",
     .commands = k_lesson,
     .help = "Lesson number, name, or a lesson file",
     .complete = Complete::lesson},
    {.name = "what",
     .value = "WHAT",
     .commands = k_generate,
     .help = "man, bash, zsh or fish",
     .complete = Complete::choices,
     .choices = "man bash zsh fish",
     .check = Check::choice,
     .required = k_generate},
    {.name = "template",
     .value = "FILE",
     .commands = k_generate,
     .help = "man: the page's template, whose @...@ lines are filled in",
     .complete = Complete::file},
    {.name = "--dark",
     .commands = k_run,
     .help = "SVG: for a dark page (dark background, light labels)",
     .man = R"roff(With \fB\-\-format svg\fR: a picture for a dark page, with a dark background
and light labels; the cells keep the colours of the light picture. With any
other format it is a usage error (status 2).)roff"},
    {.name = "--float",
     .commands = k_run,
     .help = "LaTeX: each table in a table float with caption and label",
     .man = R"roff(With \fB\-\-format latex\fR: each table in a \fBtable\fR float with a
caption (the step, its head and its formula) and a label,
\fIPREFIX\fB:\fISTEP\fR, or \fIPREFIX\fB:\fISTEP\fB:head\fIN\fR for a step per
head, e.g. \fBqkv:weights:head2\fR, for \fB\(rsref\fR. A table of more than
20 rows, which a float cannot break, stays in place with the same number and
caption.)roff"},
    {.name = "--label-prefix",
     .value = "PREFIX",
     .commands = k_run,
     .help = "LaTeX: label the floats PREFIX:STEP (default qkv)",
     .man = R"roff(The labels' prefix with \fB\-\-float\fR (default \fBqkv\fR): letters,
digits and \fB: \- . _\fR.)roff"},
    {.name = "--decode",
     .commands = k_run,
     .help = "One new token at a time, from a key/value cache",
     .man = R"roff(Compute attention as a language model generates text, one new token at a time
from a key/value cache. At position t only token t is projected: its key and
value join the cache of each key/value head (the key turned by RoPE at
position t \- 1 when \fBrope\fR is set), and its query, in each query head,
is scored against the keys in its key/value head's cache. The score of cached
position j is q\(pck_j / scale, minus m_h\(pc(t \- j) with \fBalibi\fR; the
weights are their softmax (with the head's sink under \fBsinks\fR), and the
output row is the weights times the cached values. With
\fBmask: {window: W}\fR the cache keeps only the last W positions, a rolling
buffer in which each new position overwrites the oldest. The weights and
output row of position t equal row t of the full computation's
\fBweights\fR and \fBhead_output\fR. The cache grows by
(d_k + d_v)\(pcG\(pc8 bytes a position (G key/value heads, float64).
.IP
Text, Markdown, LaTeX and HTML show, for each position, the cache (a row per cached
position: its key, then its value), the query, the scores and weights, the
output row and the bytes the cache holds; \fB\-\-head\fR N shows query head N
and the cache it reads. JSON is the document of \fBrun \-f json\fR with two
more keys: \fBdecode\fR, one entry per position t and query head h with
\fBt\fR, \fBhead\fR, \fBkv_head\fR, \fBpositions\fR, \fBcache_keys\fR,
\fBcache_values\fR, \fBquery\fR, \fBscores\fR (the row the softmax reads),
\fBweights\fR and \fBhead_output\fR; and \fBcache\fR, with
\fBkv_heads\fR, \fBbytes_per_token\fR and \fBbytes\fR (the whole cache
after the last token, whatever \fB\-\-head\fR shows).
.IP
With \fBmla\fR the cache is the one DeepSeek's inference code keeps in its
absorbed form: for every head together, each position's normed latent (r
numbers) and its rope key turned at its position (d_r), (r + d_r)\(pc8 bytes.
Each head's query absorbs its W_UK, [q_nope\(pcW_UK^T, q_rope], so that it is
scored against the cached rows as they are, and its output absorbs W_UV: the
weights times the cached latents, times W_UV. Each JSON entry then holds
\fBcache_latent\fR and \fBcache_rope_keys\fR in place of \fBcache_keys\fR and
\fBcache_values\fR, that absorbed \fBquery\fR, and \fBlatent_output\fR (the
weighted latents); \fBcache\fR adds \fBbytes_per_token_unabsorbed\fR,
H\(pc(d_n + d_r + d_v)\(pc8, what every head's keys and values would take.
.IP
Only causal self-attention decodes: \fBmask: causal\fR or
\fBmask: {window: W}\fR, without \fBpadding\fR, \fBcontext\fR or a mask
matrix. Anything else is an error (status 2) naming each problem, and so are
\fB\-\-steps\fR and \fB\-f csv\fR or \fBsvg\fR with
\fB\-\-decode\fR: those show the steps of the full computation, whose weights
and outputs decoding reproduces.)roff"},
    {.name = "--block-size",
     .value = "B",
     .commands = k_explain,
     .help = "Also work the row out as FlashAttention does, B keys at a time",
     .man = R"roff(For a \fBweights\fR or \fBhead_output\fR cell (any other cell is an error),
also work its row out the way FlashAttention computes it, never holding the
whole row of weights: the keys in blocks of B (1 ... B, B+1 ... 2B, ...);
from m = \-\(if, \(*l = 0, o = 0, each block sets m to the larger of m and
its largest score, rescales \(*l and o by exp(m_old \- m), and adds its
keys' exp(x_j \- m) to \(*l and exp(x_j \- m)\(pcv_j to o. A blocked key adds
nothing, and a block of blocked keys leaves m, \(*l and o as they were; a sink
joins last. The row ends as o / \(*l, a weight as exp(x_j \- m) / \(*l: the
same numbers as the direct softmax. In JSON each cell gains \fBblocks\fR,
\fB[{"keys": [first, last], "max", "sum", "output"}]\fR, the running m and
\(*l after each block (\-\(if as \fB"\-inf"\fR) and, for a \fBhead_output\fR
cell, o for the cell's columns. With \fBsinks\fR the list ends with the sink's
block, \fB{"sink": s_h, "max", "sum", "output"}\fR: o is rescaled and gains
nothing, so o / \(*l and exp(x_j \- m) / \(*l read from it are the cell's values,
as for every row.)roff",
     .check = Check::whole,
     .low = 1,
     .high = 65536},
    {.name = "--block-size",
     .value = "B",
     .commands = k_check,
     .help = "Answers worked B keys at a time: name the online softmax's mistakes",
     .man = R"roff(The learners worked the weights and head outputs the way FlashAttention does,
B keys at a time (as \fBexplain \-\-block\-size\fR shows it): their answers
are also tried against the online softmax's own mistakes, \(*l and o not
rescaled when a block raises the maximum, and o not divided by \(*l. Right
answers are the same numbers either way.)roff",
     .check = Check::whole,
     .low = 1,
     .high = 65536},
    {.name = "--brief",
     .commands = k_check,
     .help = "Only the steps with a mistake, and their diagnoses",
     .man = R"roff(Show only the steps with a mistake, with their diagnoses, and the summary.)roff"},
    {.name = "--answers",
     .value = "FILE|DIR",
     .commands = k_check,
     .help = "Read the answers from FILE; a folder, or several, grades a class",
     .man = R"roff(Read the answers from FILE (a YAML file, or \fB\-\fR for standard input)
instead of the example's own \fBanswers:\fR, so that one model file grades
many answer files. F holds \fBanswers: {...}\fR, or the map of answers
itself. A folder, or several \fB\-\-answers\fR, grades a class.)roff",
     .complete = Complete::yaml_file,
     .repeatable = true},
    {.name = "--tolerance",
     .value = "T",
     .commands = k_check,
     .help = "Right when within T of the true value (not rounding-aware)",
     .man = R"roff(Count a number as right when it is within T of the true value, instead of the
rounding rule and \fBdecimals:\fR.)roff",
     .check = Check::tolerance},
    {.name = "--decimals",
     .value = "N",
     .commands = k_check,
     .help = "The fewest decimals an answer may carry (default: decimals:, else 1)",
     .man = R"roff(The fewest decimals an answer may carry (0 to 15), instead of the example's
\fBdecimals:\fR (default 1).)roff",
     .check = Check::whole,
     .low = 0,
     .high = 15},
    {.name = "--rubric",
     .value = "FILE",
     .commands = k_check,
     .help = "Points per step from FILE instead of the example's rubric:",
     .man = R"roff(Each step's points from FILE (step ids and points, at the top level or under
\fBrubric:\fR), instead of the example's \fBrubric:\fR.)roff",
     .complete = Complete::yaml_file},
    {.name = "--key",
     .commands = k_worksheet,
     .help = "Fill the tables with the true values: the answer key",
     .man = R"roff(The answer key: the tables, or the template, hold the true values, at
\fB\-p\fR N decimals if given, else the example's \fBdecimals\fR, else 2
(whole-number matrices without decimals; \-\(if as \fB\-inf\fR in YAML).
\fBqkv check\fR grades every value of a key template right.)roff"},
    {.name = "--no-pause",
     .commands = k_lesson,
     .help = "Play straight through, answers shown, without waiting",
     .man = R"roff(Play straight through with the answers shown, even on a terminal.)roff"},
    {.name = "--page",
     .value = "N",
     .commands = k_lesson,
     .help = "Start at this page (to resume a lesson)",
     .man = R"roff(Start at page \fIN\fR, to resume a lesson (leaving with \fBq\fR prints the
command that goes on from there); the score counts the questions asked
from there.)roff"},
    {.name = "--answer",
     .value = "ANSWER",
     .commands = k_lesson,
     .help = "Answer the questions in order, one each; the lesson plays through",
     .man = R"roff(Answer the lesson's questions without a prompt: the first \fB\-\-answer\fR
answers the first question met (from \fB\-\-page\fR on), the next the
second, and so on; an empty one leaves its question unanswered. The lesson
plays straight through, as with \fB\-\-no\-pause\fR, and each answer is
graded as at the prompt, once: right, or wrong with the mistake it shows (or
what was expected and from which numbers), then the answer's working; the
lesson ends with the score. A number, a shape (\fB3x2\fR) or a choice (its
number, name or a word of it), as typed at the prompt. The playground grades
a lesson's questions this way.)roff",
     .repeatable = true},
    {.name = "--tokens",
     .value = "N",
     .commands = k_init,
     .help = "Number of tokens, the rows of inputs (default 3)",
     .man = R"roff(Number of tokens, the rows of \fBinputs\fR (1\(en256, default 3).)roff",
     .check = Check::whole,
     .low = 1,
     .high = 256},
    {.name = "--d-model",
     .value = "D",
     .commands = k_init,
     .help = "Width of each input row (default 4)",
     .man = R"roff(Width of each input row (1\(en256, default 4).)roff",
     .check = Check::whole,
     .low = 1,
     .high = 256},
    {.name = "--d-k",
     .value = "K",
     .commands = k_init,
     .help = "Width of queries and keys, per head (default 3)",
     .man = R"roff(Width of the queries and keys of each head (1\(en256, default 3).)roff",
     .check = Check::whole,
     .low = 1,
     .high = 256},
    {.name = "--d-v",
     .value = "V",
     .commands = k_init,
     .help = "Width of values, per head (default: d_k)",
     .man = R"roff(Width of the values of each head (1\(en256, default: the same as d_k).)roff",
     .check = Check::whole,
     .low = 1,
     .high = 256},
    {.name = "--heads",
     .value = "H",
     .commands = k_init,
     .help = "Number of heads (default 1)",
     .man = R"roff(Number of heads (1\(en16, default 1). The weights are written whole, with
\fBheads: H\fR to split them by columns; with more than one head the file
also has W_O, (H\(mud_v) \(mu d_model.)roff",
     .check = Check::whole,
     .low = 1,
     .high = 16},
    {.name = "--seed",
     .value = "S",
     .commands = k_init,
     .help = "Seed: the same seed gives the same file (default 1)",
     .man = R"roff(Seed of the numbers (0 to 2^53, default 1). A seed gives the same file on
every machine. Not with \fB\-\-student\fR, which derives the seed from the
ID: the two together are a usage error.)roff",
     .check = Check::whole,
     .low = 0,
     .high = std::int64_t{1} << 53},
    {.name = "--student",
     .value = "ID",
     .commands = k_init,
     .help = "An exercise for this student: the seed comes from the ID",
     .man = R"roff(Write an exercise for the student ID (a name or a student number: one line
of UTF-8 text, up to 200 bytes). An ID gives the same file on every machine
and with every version of qkv, so a teacher can hand out one exercise per
student and write any of them again from the ID alone. The seed of draw k
(k = 1, 2, ...) is the 64-bit FNV-1a hash of the ID's UTF-8 bytes followed by
\(oq#\(cq and k in decimal (\fBalice#1\fR): starting from
14695981039346656037, each byte is XORed in and the hash multiplied by
1099511628211, modulo 2^64. The numbers are drawn as for \fB\-\-seed\fR:
std::mt19937_64 (whose sequence the C++ standard fixes) seeded with it, each
number its next output modulo the count of numbers allowed (M+1, or 2M+1 with
\fB\-\-negative\fR) plus the lowest (0, or \-M), filling the inputs row by row
(a row of zeros drawn again), then W_Q, W_K, W_V, W_O and the biases.
.IP
init keeps the first draw that makes a good exercise. It makes each classic
mistake of \fBDIAGNOSES\fR (those marked \(lqclassic\(rq there) that the
example allows on the true values, with \fBcheck\fR's own catalogue, and requires that each changes
at least two cells of its step by more than 0.015 (so that, written to two
decimals, they are wrong), that each differs as clearly, in at least two
cells, from every other mistake \fBcheck\fR knows in that step (so that the
diagnosis is one), and that no attention weight rounds to 0 or to 1 at two
decimals (a row the mask leaves a single key, whose weight is 1, aside). After
500 draws without one it stops with an error giving the commonest reason and
the options to change (most often: a smaller \fB\-\-max\-int\fR). The file's
title names the student, its first comment the command that writes it again
and the draw, and it carries \fBdecimals: 2\fR (answers with at least two
decimals, see \fBcheck\fR); it has no suggestions to uncomment.
.IP
Refused as usage errors: \fB\-\-seed\fR; fewer than 2 tokens (3 with
\fB\-\-mask causal\fR, where a mask with 0 instead of \-\(if changes a single
score with 2); a matrix larger than 12 \(mu 12 (\fB\-\-tokens\fR,
\fB\-\-d\-model\fR, H\(mud_k and H\(mud_v at most 12); and, with the scores
divided by \(sr\fId_k\fR, d_k = \(sr\fId_model\fR (\fB\-\-d\-model 4 \-\-d\-k
2\fR), where dividing by d_k and by \(sr\fId_model\fR give the same numbers.)roff"},
    {.name = "--max-int",
     .value = "M",
     .commands = k_init,
     .help = "Largest number drawn, from 1 to 9 (default 1)",
     .man = R"roff(Every input and weight is a whole number from 0 to M (1\(en9, default 1).
No token's input row is all zeros.)roff",
     .check = Check::whole,
     .low = 1,
     .high = 9},
    {.name = "--negative",
     .commands = k_init,
     .help = "Draw numbers from -M to M instead of 0 to M",
     .man = R"roff(Draw the numbers from \-M to M instead of from 0 to M, so that inputs,
weights and scores can be negative.)roff"},
    {.name = "--mask",
     .value = "MASK",
     .commands = k_init,
     .help = "causal: token i attends only to tokens 1 ... i",
     .man = R"roff(\fBcausal\fR, the one mask init writes: \fBmask: causal\fR, token i attends
only to tokens 1 ... i. Other masks, windows and padding go into the file by
hand (see \fBEXAMPLE FILES\fR).)roff",
     .complete = Complete::choices,
     .choices = "causal"},
    {.name = "--bias",
     .commands = k_init,
     .help = "Add the biases b_Q, b_K, b_V (and b_O with several heads)",
     .man = R"roff(Add a bias to every projection, as \fBnn.MultiheadAttention\fR has them:
b_Q, b_K and b_V (\fBbias: {query, key, value}\fR, row vectors of H\(mud_k,
H\(mud_k and H\(mud_v numbers, none all zeros), and b_O (\fBbias.output\fR)
when the file has W_O. All of them rather than b_Q alone: b_K adds the same
number, q\(pcb_K, to a whole row of scores, which the softmax then ignores
\(em worth seeing by hand. They are drawn after the weights, so a seed keeps
its inputs and weights with or without \fB\-\-bias\fR.)roff"},
    {.name = "--scale",
     .value = "SCALE",
     .commands = k_init,
     .help = "sqrt_dk: divide the scores by sqrt(d_k) (default); none: do not",
     .man = R"roff(\fBsqrt_dk\fR (default): divide the scores by \(sr\fId_k\fR; \fBnone\fR:
leave them as they are.)roff",
     .complete = Complete::choices,
     .choices = "sqrt_dk none"},
    {.name = "--tokens",
     .value = "N",
     .commands = k_bench,
     .help = "Tokens n (default 512)",
     .man = R"roff(Tokens n (default 512).)roff",
     .check = Check::whole,
     .low = 1,
     .high = 65536},
    {.name = "--d-model",
     .value = "D",
     .commands = k_bench,
     .help = "Width d_model (default 768)",
     .man = R"roff(Width d_model (default 768).)roff",
     .check = Check::whole,
     .low = 1,
     .high = 65536},
    {.name = "--heads",
     .value = "H",
     .commands = k_bench,
     .help = "Heads H, dividing d_model (default 12)",
     .man = R"roff(Heads (default 12); H must divide d_model, and each head has width d_model/H.)roff",
     .check = Check::whole,
     .low = 1,
     .high = 65536},
    {.name = "--kv-heads",
     .value = "G",
     .commands = k_bench,
     .help = "Key/value heads G, dividing H (default: H)",
     .man = R"roff(Key/value heads (default: one per query head); G must divide H. As with
\fBkv_heads\fR in an example, only G heads of keys and values are projected,
and the H/G query heads of a group read the same keys and values.)roff",
     .check = Check::whole,
     .low = 1,
     .high = 65536},
    {.name = "--window",
     .value = "W",
     .commands = k_bench,
     .help = "Sliding-window causal mask of W keys (default: no mask)",
     .man = R"roff(A sliding-window causal mask: query i sees keys i \- W + 1 \(en i. Each block
of queries is computed only against the keys its rows may see, so the heads
cost O(n\(muW) instead of O(n\(ha2). A W of at least \fB\-\-tokens\fR is the
plain causal mask, where a block skips the keys after its last row. Without
\fB\-\-window\fR there is no mask.)roff",
     .check = Check::whole,
     .low = 1,
     .high = 65536},
    {.name = "--rope",
     .commands = k_bench,
     .help = "Rotate queries and keys by RoPE (base 10000, style half)",
     .man = R"roff(RoPE (base 10000, style half) on each head's queries and keys after the
projections; d_model/H must be even.)roff"},
    {.name = "--rope-dim",
     .value = "D",
     .commands = k_bench,
     .help = "RoPE on the first D elements of each head only (implies --rope)",
     .man = R"roff(Partial rotation, as \fBrope: {partial_rotary_factor: D/d_k}\fR in an
example: only the first D elements of each head's queries and keys turn, with
\(*h_k over D, and the rest pass unchanged. D must be even and at most
d_model/H. Implies \fB\-\-rope\fR.)roff",
     .check = Check::whole,
     .low = 2,
     .high = 65536},
    {.name = "--rope-scaling",
     .value = "TYPE",
     .commands = k_bench,
     .help = "RoPE scaling: linear, dynamic, yarn or llama3 (implies --rope)",
     .man = R"roff(RoPE scaling, as \fBrope: {scaling: ...}\fR in an example, with the settings of
the checkpoints that made each known: \fBlinear\fR and \fBdynamic\fR with
factor 8 over an original context of n/2 tokens (so that dynamic raises its
base), \fByarn\fR as DeepSeek-V3 (factor 40, original 4096, so the ramp and
the attention factor 1.37 on cos and sin are used), \fBllama3\fR as Llama 3.1
(factor 8, frequency factors 1 and 4, original 8192). The frequencies are
worked once, before the heads, so a scaling costs what plain RoPE does.
Implies \fB\-\-rope\fR.)roff",
     .complete = Complete::choices,
     .choices = "linear dynamic yarn llama3",
     .check = Check::choice},
    {.name = "--qk-norm",
     .commands = k_bench,
     .help = "RMSNorm of each head's queries and keys, as Qwen3 does",
     .man = R"roff(QK-norm, as \fBqk_norm: true\fR in an example: each head's queries and keys
are divided by their root mean square after the projections, before RoPE
(\fBnormed_queries\fR, \fBnormed_keys\fR). With \fB\-\-backward\fR the
gradients go back through the norm too, and \(*g gets its own.)roff"},
    {.name = "--mla",
     .commands = k_bench,
     .help = "Multi-head latent attention, with DeepSeek-V3's proportions per head",
     .man = R"roff(Multi-head latent attention, as \fBmla:\fR in an example, with DeepSeek-V3's
proportions per head (d_n = d_v = 128, d_r = 64, r = 512, r_q = 1536) scaled to
d_n = d_v = d_model / heads: d_r = d_n / 2, r = 4\(pcd_n, r_q = 12\(pcd_n, so d_k
= d_n + d_r. Each run makes the latents first (\fBq_latent\fR,
\fBnormed_q_latent\fR, \fBkv_latent\fR and \fBrope_keys\fR from one product,
\fBnormed_kv_latent\fR), then the engine makes every head's queries from the
query latent and its keys and values from [C K_R] in one product, in which
each head's rope part is the shared rope key passed on, and RoPE turns the
last d_r elements. d_model / heads must be divisible by 4. Implies RoPE; not
with \fB\-\-kv\-heads\fR, \fB\-\-rope\-dim\fR, \fB\-\-qk\-norm\fR or \fB\-\-backward\fR.)roff"},
    {.name = "--set",
     .value = "KEY=VALUE",
     .commands = k_bench,
     .help = "Set a key of the example, as a file writes it: --set mask=causal",
     .man = R"roff(Set a key of the example timed, its value written as an example file writes
it after \fBKEY:\fR (see \fBEXAMPLE FILES\fR): \fB\-\-set mask=causal\fR,
\fB\-\-set alibi=true\fR, or, quoted for the shell, \fB\-\-set
"rope={base: 500000, style: interleaved}"\fR. It replaces the key of that
name, of bench's own example or of the example file, or adds it; a later
\fB\-\-set\fR of a key wins. Any key an example takes can be timed this
way, and a problem with one is reported at its \fB\-\-set\fR. May be given
more than once.)roff",
     .repeatable = true},
    // an example's number keys (model/keys.def), each a flag of bench as well
#define QKV_NUMBER_KEY(key, key_form, key_flag, member, feeds, key_help, sentence, meaning) \
    {.name = key_flag, .value = key_form, .commands = k_bench, .help = key_help, .man = meaning, .check = Check::tolerance},
#include "model/keys.def"
    {.name = "--backward",
     .commands = k_bench,
     .help = "Time the backward pass too (dO = ones)",
     .man = R"roff(Time the backward pass too, from dO = ones (as \fBrun \-\-backward\fR on a
large input computes it): dConcat and dW_O, then per head, block by block of
queries, the weights recomputed from Q and K (no head keeps an n \(mu n
matrix), dA, dS', dQ, dK and dV, then [dW_Q dW_K dW_V] and dX. The steps
\fBgrad_concat\fR ... \fBgrad_inputs\fR follow the forward ones; the
weights recomputed for dS' count with \fBgrad_scaled_scores\fR, the time of
the one product for the three weights' gradients is shared among them, and
GFLOP/s counts the backward's products too.)roff"},
    {.name = "--repeat",
     .value = "R",
     .commands = k_bench,
     .help = "Timed runs, after one warm-up (default 10)",
     .man = R"roff(Timed runs after the warm-up (default 10).)roff",
     .check = Check::whole,
     .low = 1,
     .high = 100000},
    {.name = "--threads",
     .value = "T",
     .commands = k_bench,
     .help = "Threads sharing every step (default: QKV_THREADS, or the CPUs)",
     .man = R"roff(Threads that share every step, each calling BLAS single-threaded (default:
\fBQKV_THREADS\fR, see ENVIRONMENT).)roff",
     .check = Check::whole,
     .low = 1,
     .high = 256},
    {.name = "--max-memory",
     .value = "SIZE",
     .commands = k_bench,
     .help = "Memory limit for the benchmark (default 4GiB)",
     .man = R"roff(Refuse a size whose benchmark is estimated to need more than SIZE (default
\fB4GiB\fR), or more than the process's own limit leaves.)roff"},
    {.name = "--format",
     .short_name = "-f",
     .value = "FORMAT",
     .commands = k_shows | k_worksheet,
     .help = "Output format",
     .man = R"roff(Output format (see \fBOUTPUT FORMATS\fR).)roff",
     .complete = Complete::format,
     .check = Check::format},
    {.name = "--precision",
     .short_name = "-p",
     .value = "N",
     .commands = k_shows | k_worksheet,
     .help = "Digits after the decimal point (0-17)",
     .man = R"roff(Digits after the decimal point in tables (0\(en17, default 4). Matrices whose
entries are all whole numbers (up to 2\(ha53) print without decimals. JSON
always carries full precision.)roff",
     .check = Check::whole,
     .low = 0,
     .high = 17},
    {.name = "--steps",
     .short_name = "-s",
     .value = "LIST",
     .commands = k_shows | k_worksheet,
     .help = "Only these steps (comma-separated ids)",
     .man = R"roff(Show only these steps, a comma-separated list of step ids (see \fBSTEPS\fR).
An unknown id is an error that lists the valid ones. Steps that are not shown
are not kept in memory, so \fB\-\-steps output\fR on a large input does not
hold every head's n \(mu m matrices.)roff",
     .complete = Complete::steps,
     .check = Check::steps},
    {.name = "--head",
     .value = "N",
     .commands = k_shows | k_worksheet,
     .help = "Only head N (1-based)",
     .man = R"roff(Show only head N of the per-head steps (heads are numbered from 1).)roff",
     .check = Check::whole,
     .low = 1,
     .high = k_max_heads},
    {.name = "--full",
     .commands = k_shows,
     .help = "Show large matrices whole",
     .man = R"roff(Print large matrices and long labels whole. Without it, a matrix with more
than 12 rows or columns shows its first 6 and last 5, with \(oq\&...\(cq
between them, and a label over 16 characters (14 in SVG) is cut with
\(oq\&...\(cq \(em in the middle when two labels would otherwise look the same.)roff"},
    {.name = "--color",
     .value = "WHEN",
     .commands = k_shows,
     .help = "Colour: auto, always or never",
     .man = R"roff(\fBauto\fR (default), \fBalways\fR or \fBnever\fR. With colour the attention
weights are shaded as a heatmap and each row's largest weight is underlined.
\fBauto\fR colours only when standard output is a terminal, \fBNO_COLOR\fR is
unset or empty, and \fBTERM\fR is not \fBdumb\fR.)roff",
     .complete = Complete::choices,
     .choices = "auto always never",
     .check = Check::choice},
    {.name = "--ascii",
     .commands = k_shows | k_worksheet,
     .help = "ASCII only, no box-drawing or math symbols",
     .man = R"roff(Write only ASCII in the text, Markdown, SVG, HTML and \fBexplain\fR output
(the Markdown of \fBrun\fR, \fBexplain\fR, \fBcheck\fR, \fBlesson\fR and
\fBworksheet\fR included): no box-drawing characters, and \-inf, sqrt, *, ^T, e^10, \->, ok, X
and Z_1 in place of the mathematical symbols; other characters become
\(lq?\(rq. LaTeX is always
ASCII; CSV and JSON carry labels, titles and formulas unchanged.)roff"},
    {.name = "--brief",
     .commands = k_run | k_explain | k_lesson,
     .help = "Formulas, tables and notes; no explanations",
     .man = R"roff(Leave out the explanations; keep the formulas, tables and notes.)roff"},
    {.name = "--standalone",
     .commands = k_shows | k_worksheet,
     .help = "LaTeX: a whole document, not a fragment",
     .man = R"roff(With \fB\-\-format latex\fR (\fBrun\fR, \fBexplain\fR, \fBcheck\fR,
\fBlesson\fR, \fBworksheet\fR): a whole document that compiles with
\fBpdflatex\fR, instead of a fragment. A fragment's first line is a comment
naming the packages it needs (\fBamsmath\fR, \fBamssymb\fR, \fBbooktabs\fR).
With any other format it changes nothing (an HTML page is always whole).)roff"},
    {.name = "--output",
     .short_name = "-o",
     .value = "FILE",
     .commands = k_shows | k_worksheet | k_init | k_examples | k_playground | k_generate,
     .help = "Write to FILE instead of standard output",
     .man = R"roff(Write to FILE instead of standard output, streaming as it goes. The output
goes to a temporary file next to FILE that is renamed into place, so FILE is
never left half-written. An existing file is not replaced unless
\fB\-\-force\fR is given: qkv exits with status 2 and leaves it untouched;
a replaced file keeps its permission bits and owner. A symbolic link is
followed: the file it points to is replaced in its own folder. A FIFO or a
character device (such as \fI/dev/null\fR) is written straight into and needs
no \fB\-\-force\fR, since nothing is replaced; a block device needs
\fB\-\-force\fR; a folder is an error. No temporary file is left behind, on
an error or when qkv is interrupted, and a reader that closes a FIFO early
ends qkv quietly, as a closed pipe does. \fB\-o \-\fR is standard output.
With \fB\-o\fR, \fB\-\-color auto\fR does not colour.)roff",
     .complete = Complete::file},
    {.name = "--force",
     .commands = k_shows | k_worksheet | k_init | k_examples | k_playground | k_generate,
     .help = "Let -o replace an existing file",
     .man = R"roff(Let \fB\-o\fR replace an existing file.)roff"},
    {.name = "--max-memory",
     .value = "SIZE",
     .commands = k_shows | k_worksheet,
     .help = "Memory limit for the computation (default 4GiB)",
     .man = R"roff(Refuse inputs whose computation is estimated to need more than SIZE
(default \fB4GiB\fR; units B, KiB, MiB, GiB, TiB), before any of it is
allocated. For \fBrun\fR the
estimate counts only the n \(mu m matrices of the steps that \fB\-\-steps\fR
and \fB\-\-head\fR will show; a mask (causal, a window, padding) costs no
n \(mu m matrix unless a step that shows it is kept. The estimate is also held
against what the process's own limit (\fBulimit \-v\fR, \fBulimit \-d\fR)
leaves.)roff"},
    {.name = "--allow-any-path",
     .commands = k_shows | k_worksheet,
     .help = "Let {file: ...} read outside the example's folder",
     .man = R"roff(Let \fB{file: ...}\fR matrices be read from outside the example file's folder
(absolute paths, or paths with \fB..\fR).)roff"},
    {.name = "--backward",
     .commands = k_run | k_explain | k_check | k_worksheet,
     .help = "Add the gradients; grad_output: ones unless the file gives it",
     .man = R"roff(Add the backward pass: the example's \fBgrad_output\fR, or, without one,
\fBgrad_output: ones\fR (L is the sum of every output value). Not with
\fBrun \-\-decode\fR.)roff"},
    {.name = "--format",
     .short_name = "-f",
     .value = "FORMAT",
     .commands = k_bench,
     .help = "Output format: text or json",
     .man = R"roff(\fBtext\fR (default), a table, or \fBjson\fR, one object:
\fBschema_version\fR, \fBtokens\fR, \fBd_model\fR, \fBheads\fR,
\fBkv_heads\fR (H without \fB\-\-kv\-heads\fR), \fBwindow\fR (\fBnull\fR
without \fB\-\-window\fR), \fBrope\fR (\fBtrue\fR or \fBfalse\fR), \fBrope_dim\fR
(the rotated width D, \fBnull\fR without \fB\-\-rope\-dim\fR), \fBrope_scaling\fR
(its type, \fBnull\fR without \fB\-\-rope\-scaling\fR), \fBqk_norm\fR
(\fBtrue\fR or \fBfalse\fR), \fBmla\fR (\fBtrue\fR or \fBfalse\fR), then one key for each flag
above that sets an example's number key, by the key's name (its value, \fBnull\fR when not given), \fBbackward\fR (\fBtrue\fR or
\fBfalse\fR), \fBthreads\fR, \fBblas\fR, \fBrepeat\fR, \fBtotal_ms\fR, \fBgflops\fR,
\fBpeak_rss_mb\fR and \fBsteps\fR, a list of \fB{id, median_ms}\fR in step
order.)roff",
     .complete = Complete::format,
     .check = Check::format},
    {.name = "--help",
     .short_name = "-h",
     .commands = k_every,
     .help = "Print this help message and exit",
     .man = R"roff(Show the options of qkv or of one command.)roff"},
    {.name = "--version",
     .commands = k_qkv,
     .help = "Display program version information and exit",
     .man = R"roff(Show the version, the build type and the BLAS library in use (or \(lqnone\(rq).)roff"},
};

}  // namespace

std::span<const CommandDef> command_table() { return k_commands; }

std::span<const Flag> flag_table() { return k_flags; }

std::vector<const CommandDef*> shown_commands() {
    std::vector<const CommandDef*> commands;
    for (const CommandDef& command : command_table()) {
        if (!command.hidden && command.id != CommandId::qkv) {
            commands.push_back(&command);
        }
    }
    return commands;
}

const CommandDef& command_def(CommandId id) {
    for (const CommandDef& command : k_commands) {
        if (command.id == id) {
            return command;
        }
    }
    throw std::logic_error("a command without a row");
}

std::vector<const Flag*> flags_of(CommandId id) {
    std::vector<const Flag*> flags;
    for (const Flag& flag : k_flags) {
        if (flag.takes(id)) {
            flags.push_back(&flag);
        }
    }
    return flags;
}

std::vector<std::string> choices_of(const Flag& flag) {
    std::vector<std::string> choices;
    std::istringstream words{std::string(flag.choices)};
    for (std::string word; words >> word;) {
        choices.push_back(word);
    }
    return choices;
}

std::vector<std::string> format_choices(CommandId id) {
    const CommandDef& command = command_def(id);
    return command.writes ? format_names(formats_of(*command.writes)) : std::vector<std::string>{};
}

}  // namespace qkv::cli
