use metachron::{model::Robot, params::Params};
fn main() {
    let p = Params::default();
    let r = Robot::new(&p);
    let (q, v) = r.initial_state();
    let mut a = vec![0.0; r.nq()];
    let t0 = std::time::Instant::now();
    let mut s = 0.0;
    for _ in 0..100000 {
        s += r.accelerations(&q, &v, &mut a);
    }
    println!("rhs {:.2} us {s}", t0.elapsed().as_secs_f64() * 10.0);
    let mut m = metachron::integrate::bordered_band::BorderedBand::new(183, 3, 39, 30);
    for i in 0..183 {
        for j in 0..183 {
            *m.at(i, j) = if i == j {
                10.0
            } else {
                ((i * 7 + j * 3) % 11) as f64 * 0.01
            };
        }
    }
    let a0 = m.a.clone();
    let t0 = std::time::Instant::now();
    for _ in 0..200 {
        m.a.copy_from_slice(&a0);
        m.factor().unwrap();
    }
    println!("lu {:.1} us", t0.elapsed().as_secs_f64() * 1e6 / 200.0);
    let mut b = vec![1.0; 183];
    let t0 = std::time::Instant::now();
    for _ in 0..10000 {
        m.solve(&mut b);
    }
    println!("solve {:.2} us", t0.elapsed().as_secs_f64() * 1e6 / 10000.0);
}
