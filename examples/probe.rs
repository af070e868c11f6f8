use metachron::{metrics::*, model::Robot, params::Params, reference::*};
fn main() {
    let mut p = Params::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    for a in &args {
        p.apply_override(a).unwrap();
    }
    let r = Robot::new(&p);
    let s = MetricsSettings::default();
    let times: Vec<f64> = (0..=s.sample_count(p.t_final))
        .map(|k| s.sample_time(k, p.t_final))
        .collect();
    let mut acc = MetricsAccumulator::new(&p, &s);
    let t0 = std::time::Instant::now();
    let mut last = 0.0;
    let mut steps = 0usize;
    let mut nextp = 0.0;
    let mut set = ReferenceSettings::default();
    match std::env::var("M").as_deref() {
        Ok("e") => set.method = Method::DiffsolEsdirk34,
        Ok("b") => set.method = Method::DiffsolBdf,
        _ => {}
    }
    if let Ok(r) = std::env::var("RTOL") {
        set.rtol = r.parse().unwrap();
    }
    if let Ok(r) = std::env::var("ATOL") {
        set.atol = r.parse().unwrap();
    }
    let run = run_reference(
        &r,
        &set,
        &times,
        |smp| {
            acc.push(smp);
            if smp.t - last >= 1.0 {
                last = smp.t;
                eprintln!(
                    "t={:.2} psi0={:.4} body={:?} inext={:.2e} wall={:.1}",
                    smp.t,
                    smp.psi[0],
                    smp.body,
                    smp.inext.iter().cloned().fold(0.0, f64::max),
                    t0.elapsed().as_secs_f64()
                );
            }
        },
        |t| {
            steps += 1;
            if t >= nextp {
                eprintln!(
                    "  t={t:.2} steps={steps} wall={:.1}",
                    t0.elapsed().as_secs_f64()
                );
                nextp += 0.5;
            }
        },
    )
    .unwrap();
    println!(
        "{:?} {:?} wall {:.2}s",
        run.status,
        run.stats,
        t0.elapsed().as_secs_f64()
    );
    println!("{:?}", acc.finish(run.status));
}
