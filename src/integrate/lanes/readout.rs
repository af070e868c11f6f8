//! What a block's samples read off its state, computed for every lane at once: each
//! leg's constraint residual V = qᵀGq − ℓ and whether a lane's state is still sane.
//! Samples fall due together in most blocks (their lanes share a schedule), and one
//! pass over the block in lanes costs less than W passes over gathered copies.
//!
//! The sums run in the order and with the plain products of `Dense::quad` and
//! `Robot::constraint`, so a lane's residual has the bits those give it.

use super::kernel::BlockState;
use super::model::{band, band_present, Banded, BlockModel};
use super::simd::L;
use crate::model::Robot;
use crate::sample::{coordinate_is_sane, Sample};

/// Residuals and sanity of every lane at one instant of a block.
pub struct Readout<const W: usize> {
    /// V of leg i in every lane.
    pub residual: Vec<L<W>>,
    /// Lane j's coordinates are finite and within `DIVERGENCE_BOUND`, and its
    /// velocities finite (`state_is_sane` and the velocities' check, lane by lane).
    pub sane: [bool; W],
}

impl<const W: usize> Readout<W> {
    pub fn new(m: &BlockModel<W>, st: &BlockState<W>) -> Self {
        let (n, l) = (m.n_nodes, 4 * m.n_nodes);
        let g = &m.matrices.geometric;
        let residual = (0..m.n_legs)
            .map(|i| {
                let leg = &st.q[i * l..(i + 1) * l];
                quad(g, n, &leg[..2 * n]) + quad(g, n, &leg[2 * n..]) - m.p.leg_length
            })
            .collect();
        let mut sane = [true; W];
        for (q, v) in st.q.iter().zip(&st.v) {
            for j in 0..W {
                sane[j] &= coordinate_is_sane(q.0[j]) && v.0[j].is_finite();
            }
        }
        Readout { residual, sane }
    }

    /// Lane j's sample at time t (work_axo 0: the caller sets it); `q` holds all its
    /// coordinates where the caller keeps them, else nothing.
    pub fn sample(
        &self,
        robot: &Robot,
        st: &BlockState<W>,
        j: usize,
        t: f64,
        q: Vec<f64>,
    ) -> Sample {
        let ix = robot.idx;
        let at = |k: usize| st.q[k].0[j];
        let o = robot.n_legs * robot.leg_dofs;
        let body = [at(o), at(o + 1), at(o + 2)];
        let mut s = Sample::begin(robot, t, body, st.work.lane(j), q);
        let tip = ix.tip();
        for (i, v) in self.residual.iter().enumerate() {
            let leg = i * robot.leg_dofs;
            s.push_leg(
                robot,
                [at(leg + ix.b(0)), at(leg + ix.d(0))],
                [at(leg + ix.a(tip)), at(leg + ix.c(tip))],
                v.lane(j),
            );
        }
        s
    }
}

/// xᵀAx of one component block, A banded: Σᵢ xᵢ·(row i · x) in row order, each row's
/// present columns summed from zero in increasing order (`Dense::quad`).
fn quad<const W: usize>(a: &Banded<L<W>>, n: usize, x: &[L<W>]) -> L<W> {
    let mut total: Option<L<W>> = None;
    for (i, row) in a.coef.iter().enumerate() {
        let (present, c) = (band_present(n, i), band(n, i));
        let mut s = L::zero();
        for t in 0..6 {
            if present[t] {
                s += row[t] * x[c[t]];
            }
        }
        let term = x[i] * s;
        total = Some(total.map_or(term, |sum| sum + term));
    }
    total.unwrap_or_else(L::zero)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrate::record::InstanceRecord;
    use crate::params::Params;
    use crate::sample::DIVERGENCE_BOUND;

    /// Bent legs and a moved body in four lanes, three of them with other leg
    /// lengths: each lane's sample is the bits of `Sample::from_state`.
    #[test]
    fn a_lanes_sample_is_the_sample_of_its_state() {
        let robots: Vec<Robot> = [1.0, 1.3, 0.8, 1.0]
            .iter()
            .map(|&len| {
                let mut p = Params::default();
                p.leg_length *= len;
                Robot::new(&p)
            })
            .collect();
        let records: Vec<InstanceRecord> = robots
            .iter()
            .map(|r| InstanceRecord::new(r, 1e-4, 0.0))
            .collect();
        let model = BlockModel::<4>::new(&records.iter().collect::<Vec<_>>());
        let nq = robots[0].nq();
        let bend = |j: usize, k: usize| (0.37 * k as f64 + 0.61 * j as f64).sin() * 0.05;
        let states: Vec<Vec<f64>> = robots
            .iter()
            .enumerate()
            .map(|(j, r)| {
                let q0 = r.initial_state().0;
                q0.iter().enumerate().map(|(k, x)| x + bend(j, k)).collect()
            })
            .collect();
        let mut st = BlockState::<4>::at_rest(nq, |j, k| states[j][k]);
        st.work = L([0.5, 1.5, 2.5, 3.5]);
        let readout = Readout::new(&model, &st);
        for (j, r) in robots.iter().enumerate() {
            let want = Sample::from_state(r, 0.25, &states[j], st.work.lane(j));
            let got = readout.sample(r, &st, j, 0.25, states[j].clone());
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "lane {j}");
            assert!(
                want.inext.iter().all(|&x| x > 1e-6),
                "the legs are stretched"
            );
            assert!(readout.sane[j]);
        }
    }

    #[test]
    fn a_lane_out_of_range_or_not_finite_is_not_sane() {
        let robot = Robot::new(&Params::default());
        let record = InstanceRecord::new(&robot, 1e-4, 0.0);
        let model = BlockModel::<4>::new(&[&record]);
        let q0 = robot.initial_state().0;
        let mut st = BlockState::<4>::at_rest(q0.len(), |_, k| q0[k]);
        st.q[3].0[1] = 2.0 * DIVERGENCE_BOUND;
        st.v[5].0[2] = f64::NAN;
        st.q[7].0[3] = f64::INFINITY;
        let sane = Readout::new(&model, &st).sane;
        assert_eq!(sane, [true, false, false, false]);
    }
}
