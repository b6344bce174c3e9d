//! Markdown rendering (`markdown::render_message`), as the send path runs
//! it: a typical chat message with a mention, an emoji, a link and code;
//! an adversarial one (deep nesting, runs of unclosed delimiters, many
//! mentions) of the same 10,000-character maximum size; highlighted code
//! blocks of 200 lines (Python, JSON, and YAML, whose lexer keeps an
//! indentation context); and a message with 20 formulas (KaTeX), warm and
//! as the first message after KaTeX starts (`formulas_20_after_start`: a
//! new KaTeX thread for each). The first iteration of a code block
//! includes compiling its lexer.
//!
//! Run: `cargo bench --bench markdown`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use std::time::{Duration, Instant};

use natter::markdown::{render_message, restart_katex};

#[path = "common/markdown_inputs.rs"]
mod inputs;
use inputs::{Names, TYPICAL};

fn adversarial() -> String {
    let mut s = String::new();
    s.push_str(&">".repeat(1000));
    s.push_str(" deep\n\n");
    s.push_str(&"- ".repeat(500));
    s.push_str("list\n\n");
    s.push_str(&"@**".repeat(500));
    s.push_str(&"[*_`".repeat(300));
    s.push_str(&"@**King Hamlet** :smile: ".repeat(150));
    s.push_str(&"```spoiler\n".repeat(20));
    s.truncate(10_000);
    s
}

/// A 200-line Python code block.
fn code_block() -> String {
    let mut s = String::from("```python\n");
    for i in 0..40 {
        s.push_str(&format!("def handler_{i}(request, *args, **kwargs):\n"));
        s.push_str("    \"\"\"Answer one request.\"\"\"\n");
        s.push_str(&format!(
            "    limit = max(int(request.get('limit', {i})), 1)  # at least one\n"
        ));
        s.push_str("    return [x ** 2 for x in range(limit) if x % 3 == 0]\n\n");
    }
    s.push_str("```");
    s
}

/// A 200-line JSON code block (Pygments' JSON scanner, ported).
fn json_block() -> String {
    let mut s = String::from("```json\n[\n");
    for i in 0..198 {
        s.push_str(&format!(
            "  {{\"id\": {i}, \"name\": \"user {i}\", \"score\": {i}.5, \"active\": true}},\n"
        ));
    }
    s.push_str("  null\n]\n```");
    s
}

/// A 200-line YAML block: nested mappings, sequences, block scalars.
fn yaml_block() -> String {
    let mut s = String::from("```yaml\n");
    for i in 0..20 {
        s.push_str(&format!("service_{i}:\n  image: \"natter:{i}.0\"  # pinned\n"));
        s.push_str("  ports: [8080, 9991]\n  env:\n    - RUST_LOG=info\n");
        s.push_str(&format!("    - ID={i}\n  command: |\n    natter --port {i}\n"));
        s.push_str("    --data /var/lib/natter\n  restart: always\n");
    }
    s.push_str("```");
    s
}

/// Twenty formulas, inline and displayed.
fn formulas() -> String {
    let mut s = String::new();
    for i in 0..10 {
        s.push_str(&format!("Step {i}: $$\\frac{{a_{i}}}{{b}} + \\sqrt{{x^{i}}}$$ holds.\n\n"));
        s.push_str(&format!("```math\n\\sum_{{k=0}}^{{{i}}} \\binom{{n}}{{k}} = 2^n\n```\n\n"));
    }
    s
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("markdown");
    group.throughput(Throughput::Bytes(TYPICAL.len() as u64));
    group.bench_function("typical", |b| b.iter(|| render_message(TYPICAL, &Names)));
    let hostile = adversarial();
    group.throughput(Throughput::Bytes(hostile.len() as u64));
    group.bench_function("adversarial_10k", |b| b.iter(|| render_message(&hostile, &Names)));
    let code = code_block();
    group.throughput(Throughput::Bytes(code.len() as u64));
    group.bench_function("code_block_200_lines", |b| b.iter(|| render_message(&code, &Names)));
    let json = json_block();
    group.throughput(Throughput::Bytes(json.len() as u64));
    group.bench_function("json_block_200_lines", |b| b.iter(|| render_message(&json, &Names)));
    let yaml = yaml_block();
    group.throughput(Throughput::Bytes(yaml.len() as u64));
    group.bench_function("yaml_block_200_lines", |b| b.iter(|| render_message(&yaml, &Names)));
    let math = formulas();
    group.throughput(Throughput::Bytes(math.len() as u64));
    group.bench_function("formulas_20", |b| b.iter(|| render_message(&math, &Names)));
    group.finish();
    // Each iteration starts a new KaTeX thread (QuickJS and KaTeX loaded
    // again): fewer samples.
    let mut cold = c.benchmark_group("markdown_cold");
    cold.sample_size(10);
    cold.bench_function("formulas_20_after_start", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                restart_katex();
                let start = Instant::now();
                render_message(&math, &Names);
                total += start.elapsed();
            }
            total
        })
    });
    cold.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
