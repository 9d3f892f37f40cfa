//! `fencegate-types TEMPLATE OUT`: writes `pkg/index.d.ts` from its template
//! `pkg/index.d.ts.in`, with the declarations Rust defines in their places
//! (`fencegate::typescript::render`; docs/decisions/generated-types.md). Run by
//! `scripts/gen-types.sh`, which `scripts/build.sh` calls.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [template, out] = args.as_slice() else {
        eprintln!("usage: fencegate-types TEMPLATE OUT");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(template).unwrap_or_else(|e| {
        eprintln!("fencegate-types: {template}: {e}");
        std::process::exit(1);
    });
    match fencegate::typescript::render(&text) {
        Ok(dts) => {
            if let Err(e) = std::fs::write(out, dts) {
                eprintln!("fencegate-types: {out}: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("fencegate-types: {template}: {e}");
            std::process::exit(1);
        }
    }
}
