//! `model-check [--large] [--threads N] [--limit STATES] [--set field=value]...`:
//! runs the model check at the CI bounds (or the larger one) and prints, per
//! run, the state count, the time, the `sometimes` examples reached and every
//! counterexample as a trace in words. Exits 1 when there is a counterexample
//! or a `sometimes` property was reached by none of the runs.
use fencegate_model::{Bounds, FenceModel};

fn main() {
    let mut large = false;
    let mut threads = 1;
    let mut limit = None;
    let mut custom: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--large" => large = true,
            "--threads" => {
                threads = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--limit" => limit = args.next().and_then(|n| n.parse().ok()),
            "--set" => custom.push(args.next().unwrap_or_else(|| usage())),
            _ => usage(),
        }
    }
    let mut runs = if large { Bounds::large() } else { Bounds::ci() };
    if !custom.is_empty() {
        // Custom bounds start from the first run's and make one run.
        let mut bounds = runs[0].1.clone();
        for kv in &custom {
            bounds.set(kv).unwrap_or_else(|e| {
                eprintln!("{e}");
                usage()
            });
        }
        runs = vec![("custom", bounds)];
    }
    let mut failed = false;
    let mut reached = std::collections::BTreeSet::new();
    let mut unreached = std::collections::BTreeSet::new();
    for (name, bounds) in runs {
        println!("== {name}: {bounds:?}");
        let run = FenceModel::new(bounds).run(threads, false, limit);
        println!(
            "explored {} unique states ({} generated, depth {}) in {:.1} s with {threads} thread(s){}",
            run.unique_states,
            run.states,
            run.max_depth,
            run.elapsed.as_secs_f64(),
            if limit.is_some() { " (state limit: not exhaustive)" } else { "" }
        );
        for (p, _) in &run.reached {
            println!("reached     {p}");
            reached.insert(*p);
        }
        for p in &run.unreached {
            println!("not reached {p}");
            unreached.insert(*p);
        }
        for (p, trace) in &run.counterexamples {
            println!("COUNTEREXAMPLE {p}\n{trace}");
        }
        println!("{} counterexamples", run.counterexamples.len());
        failed |= !run.counterexamples.is_empty();
    }
    // A `sometimes` property must be reached by at least one of the runs.
    for p in unreached.difference(&reached) {
        println!("NEVER REACHED in any run: {p}");
        failed = true;
    }
    if failed {
        std::process::exit(1);
    }
}

fn usage() -> ! {
    eprintln!("usage: model-check [--large] [--threads N] [--limit STATES] [--set field=value]...");
    std::process::exit(2);
}
