//! Running a batch on the device: per-instance constants and initial state are
//! uploaded once, the `advance` stage is dispatched over successive ranges of output
//! samples with the state resident, and only the final state and status words are
//! read back and turned into the same [`PointResult`] every backend reports. With
//! `--until-settled` the state is read back at the end of each segment, and the
//! unsettled instances are gathered into a fresh, compact batch with a longer schedule
//! that goes on from their state (the finished ones do not occupy workgroups).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use wgpu::util::DeviceExt;

use super::device::GpuContext;
use super::instance::{instance_values, leg_values};
use super::layout::{
    robots_per_workgroup, Control, InstanceInts, KernelShape, MatrixLayout,
    LOOP_ITERATIONS_PER_STEP, SOFTWARE_LOOP_BUDGET,
};
use super::point_budget::{Budgets, BUDGET_STOP};
use super::shader::{self, ENTRY_POINT};
use super::tally::{self, RunningSum, StateLayout};
use super::{GpuError, Precision};
use crate::error::SolverError;
use crate::integrate::continuation::continued_schedule;
use crate::integrate::dkd::DkdSettings;
use crate::integrate::lanes::driver::start_velocity;
use crate::integrate::record::{InstanceRecord, MatrixSet};
use crate::integrate::schedule::SampleSchedule;
use crate::metrics::{LastSample, MetricsAccumulator, Tally, TallyMid};
use crate::model::Robot;
use crate::reference::SolverStats;
use crate::sample::Status;
use crate::simulate::{Backend, PointResult, RunConfig};

/// Steps per dispatch on hardware adapters: long enough to amortise a submit, short
/// enough that a display driver's watchdog never sees a long dispatch.
pub const HARDWARE_STEPS_PER_DISPATCH: u32 = 2000;

/// Host-side plan of one instance.
#[derive(Debug, Clone)]
struct InstancePlan {
    /// WGSL `Instance` and `LegParams` words (src/gpu/instance.rs).
    params: Vec<f64>,
    legs: Vec<f64>,
    matrix_set: u32,
    /// The schedule of the current segment (the whole run so far).
    sched: SampleSchedule,
    h: f64,
    q0: Vec<f64>,
    /// The velocity the kernel's first opening drift moves at (zero unless the scheme
    /// resolves the start, `lanes::driver::start_velocity`); the run starts at rest.
    v_start: Vec<f64>,
}

impl InstancePlan {
    fn ints(&self) -> InstanceInts {
        let s = &self.sched;
        InstanceInts {
            matrix_set: self.matrix_set,
            steps_per_sample: s.steps_per_sample as u32,
            steps_last: s.steps_last as u32,
            n_samples: s.n_samples as u32,
            window_first: s.window_first as u32,
            window_mid: s.window_mid as u32,
        }
    }
}

/// What every segment of one batch shares: its kernel, its matrix sets, its state
/// layout, and whether the caller wants q and v back.
struct Batch<'a> {
    pipeline: &'a wgpu::ComputePipeline,
    mats: &'a wgpu::Buffer,
    lay: StateLayout,
    with_state: bool,
}

/// What one batch's dispatches bind.
struct Dispatch<'a> {
    pipeline: &'a wgpu::ComputePipeline,
    bind: &'a wgpu::BindGroup,
    ctl: &'a wgpu::Buffer,
    /// The status words (a budget stop is written here between dispatches).
    status: &'a wgpu::Buffer,
    batch: u32,
    groups: u32,
}

/// A compiled pipeline per kernel shape (the precision is the context's).
pub struct GpuEngine {
    pub ctx: GpuContext,
    /// Override of the steps per dispatch (default: by adapter, see
    /// [`GpuEngine::steps_per_dispatch`]).
    pub steps_per_dispatch: Option<u32>,
    pipelines: Mutex<HashMap<KernelShape, wgpu::ComputePipeline>>,
}

/// One instance's upload and bookkeeping: its values, leg data, matrix set, sample
/// schedule, step and initial state, so the batch can be assembled without the robot.
fn plan_instance(
    cfg: &RunConfig,
    settings: &DkdSettings,
    robot: &Robot,
    record: &InstanceRecord,
    matrix_set: u32,
) -> InstancePlan {
    let h = record.h();
    let sched = SampleSchedule::new(&cfg.metrics, cfg.params.t_final, h);
    let (q0, _) = robot.initial_state();
    let v_start = if settings.resolves_start() {
        start_velocity(record, &q0)
    } else {
        vec![0.0; q0.len()]
    };
    InstancePlan {
        params: instance_values(record),
        legs: leg_values(record),
        matrix_set,
        sched,
        h,
        q0,
        v_start,
    }
}

/// The batch's per-instance plans and its matrix sets (instances with equal keys share
/// one set; the key is every matrix entry's bits and ℓ's, whose low word is in the set).
fn plan_batch(cfgs: &[&RunConfig], shape: KernelShape) -> (Vec<InstancePlan>, Vec<f64>) {
    let mut set_of: HashMap<Vec<u64>, u32> = HashMap::new();
    let mut mats: Vec<f64> = Vec::new();
    let mut plans = Vec::with_capacity(cfgs.len());
    for cfg in cfgs {
        let robot = Robot::new(&cfg.params);
        // The settings this point runs (`DkdSettings::for_point`): its θ and its start.
        let settings = cfg.fixed_step.for_point(&cfg.params);
        let h = settings.step_for(&robot, cfg.metrics.dt_out);
        let record = InstanceRecord::with_form(&robot, h, settings.kick_form());
        let leg_length = record.params.leg_length;
        let mut key = record.matrices.key();
        key.push(leg_length.to_bits());
        // Harmonics beyond the instance's constants travel with the set (none unless
        // the rough profile has more than eight modes).
        let extra: Vec<f64> = record.terrain_extra.iter().flatten().copied().collect();
        key.extend(extra.iter().map(|x| x.to_bits()));
        let next = set_of.len() as u32;
        let set = *set_of.entry(key).or_insert_with(|| {
            let lay = shape.matrices();
            let mut words = matrix_words(&record.matrices, leg_length, lay);
            words[lay.terrain_extra()..lay.terrain_extra() + extra.len()].copy_from_slice(&extra);
            mats.extend(words);
            next
        });
        plans.push(plan_instance(cfg, &settings, &robot, &record, set));
    }
    (plans, mats)
}

/// After a segment: give every instance that continues (`continued_schedule`) its
/// longer schedule; the indices of those that do. An instance stopped over its budget
/// ends there (its status is not ok).
fn extend_unsettled(
    cfgs: &[&RunConfig],
    plans: &mut [InstancePlan],
    lay: StateLayout,
    state: &[f64],
    status: &[u32],
    budgets: &Budgets,
) -> Vec<usize> {
    let b = cfgs.len();
    let mut longer = Vec::new();
    for (i, cfg) in cfgs.iter().enumerate() {
        let stop = budgets.stopped_at(i);
        let m = finish_instance(cfg, &plans[i], lay, state, b, i, status[i], stop, 0.0);
        let pl = &mut plans[i];
        let next = m.metrics.status.is_ok().then(|| {
            continued_schedule(
                cfg.continuation(),
                &pl.sched,
                m.metrics.t_run,
                m.metrics.settled,
            )
        });
        if let Some((_, sched)) = next.flatten() {
            pl.sched = sched;
            longer.push(i);
        }
    }
    longer
}

/// The batch's initial state (SoA, every slot), the running sums at 0.
fn initial_state(plans: &[InstancePlan], lay: StateLayout) -> Vec<f64> {
    let b = plans.len();
    let mut state = vec![0.0; lay.slots() * b];
    for (i, pl) in plans.iter().enumerate() {
        for (k, (&x, &v)) in pl.q0.iter().zip(&pl.v_start).enumerate() {
            state[(lay.q() + k) * b + i] = x;
            state[(lay.v() + k) * b + i] = v;
            // The compensated kernel's q_lo: what f32 rounding leaves of q0.
            if let Some(lo) = lay.q_lo() {
                state[(lo + k) * b + i] = x - f64::from(x as f32);
            }
        }
    }
    state
}

/// One matrix set's words in the layout `lay` of its kernel; `leg_length` is the ℓ of
/// the instances that share it.
fn matrix_words(set: &MatrixSet, leg_length: f64, lay: MatrixLayout) -> Vec<f64> {
    let mut out = vec![0.0; lay.stride()];
    let mut put = |at: usize, x: &[f64]| out[at..at + x.len()].copy_from_slice(x);
    put(lay.bending(), &set.bending.a);
    put(lay.geometric(), &set.geometric.a);
    put(lay.p_inv(), &set.p_inv.a);
    put(lay.load(), &set.load);
    // What the f32 kernel needs to evaluate V = qᵀGq − ℓ exactly (f64 ignores them).
    let lo = |x: f64| x - f64::from(x as f32);
    let g_lo: Vec<f64> = set.geometric.a.iter().map(|&g| lo(g)).collect();
    put(lay.geometric_lo(), &g_lo);
    put(lay.leg_length_lo(), &[lo(leg_length)]);
    put(lay.one(), &[1.0]);
    if let (true, Some(c)) = (lay.couple, &set.couple) {
        put(lay.couple_cos(), &c.cos.a);
        put(lay.couple_sin(), &c.sin.a);
    }
    out
}

/// f64 words to the device's `real`.
fn reals(x: &[f64], precision: Precision) -> Vec<u8> {
    match precision {
        Precision::F64 => bytemuck::cast_slice(x).to_vec(),
        Precision::F32 => {
            let y: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            bytemuck::cast_slice(&y).to_vec()
        }
    }
}

/// Read reals back from the device in the kernel's precision, widened to f64.
fn from_reals(bytes: &[u8], precision: Precision) -> Vec<f64> {
    match precision {
        Precision::F64 => bytemuck::pod_collect_to_vec::<u8, f64>(bytes),
        Precision::F32 => bytemuck::pod_collect_to_vec::<u8, f32>(bytes)
            .into_iter()
            .map(f64::from)
            .collect(),
    }
}

impl GpuEngine {
    /// An engine on `ctx` (a cheap handle: wgpu's device and queue are shared).
    pub fn new(ctx: &GpuContext) -> Self {
        GpuEngine {
            ctx: ctx.clone(),
            steps_per_dispatch: None,
            pipelines: Mutex::new(HashMap::new()),
        }
    }

    fn word(&self) -> u64 {
        match self.ctx.precision {
            Precision::F64 => 8,
            Precision::F32 => 4,
        }
    }

    /// Most instances of this shape one dispatch chain can hold.
    pub fn max_batch(&self, n_legs: usize, n_nodes: usize) -> usize {
        let per =
            (StateLayout::new(n_legs, n_nodes, self.ctx.precision).slots() as u64) * self.word();
        let limit = self
            .ctx
            .limits
            .max_storage_buffer_binding_size
            .min(self.ctx.limits.max_buffer_size);
        let by_workgroups = self.ctx.limits.max_compute_workgroups_per_dimension as u64
            * robots_per_workgroup(n_legs) as u64;
        (limit / per).min(by_workgroups).max(1) as usize
    }

    /// Steps per dispatch: on software adapters, as many as fit the per-invocation
    /// loop budget with a 20 % margin (the same for every shape: one loop iteration
    /// per step).
    pub fn steps_per_dispatch(&self) -> u32 {
        if let Some(n) = self.steps_per_dispatch {
            return n.max(1);
        }
        if self.ctx.adapter.device_type != "Cpu" {
            return HARDWARE_STEPS_PER_DISPATCH;
        }
        ((SOFTWARE_LOOP_BUDGET * 4 / 5) / LOOP_ITERATIONS_PER_STEP) as u32
    }

    fn pipeline(&self, shape: KernelShape) -> Result<wgpu::ComputePipeline, GpuError> {
        let mut cache = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = cache.get(&shape) {
            return Ok(p.clone());
        }
        let src = shader::source(shape, self.ctx.precision);
        shader::validate(&src)?;
        let dev = &self.ctx.device;
        let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let checks = wgpu::ShaderRuntimeChecks {
            force_loop_bounding: false,
            ..wgpu::ShaderRuntimeChecks::checked()
        };
        // SAFETY: bounds checks stay on; only naga's forced loop bounding is off. Every
        // loop of the kernel is bounded by a constant or by the host-checked sample and
        // step counts, so no invocation can loop forever.
        let module = unsafe {
            dev.create_shader_module_trusted(
                wgpu::ShaderModuleDescriptor {
                    label: Some("metachron advance"),
                    source: wgpu::ShaderSource::Wgsl(src.into()),
                },
                checks,
            )
        };
        let pipeline = dev.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("metachron advance"),
            layout: None,
            module: &module,
            entry_point: Some(ENTRY_POINT),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Shader(e.to_string()));
        }
        cache.insert(shape, pipeline.clone());
        Ok(pipeline)
    }

    /// Run every configuration; instances of equal (legs, nodes) share dispatches.
    /// A diverging instance is flagged in its own result and never stops the others.
    pub fn run(&self, cfgs: &[RunConfig]) -> Result<Vec<PointResult>, GpuError> {
        Ok(self
            .run_with_state(cfgs)?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }

    /// As [`GpuEngine::run`], also returning each instance's final (q, v) as f64
    /// (for checking the shader against its CPU twin state by state).
    pub fn run_with_state(
        &self,
        cfgs: &[RunConfig],
    ) -> Result<Vec<(PointResult, Vec<f64>)>, GpuError> {
        self.run_groups(cfgs, true)
    }

    fn run_groups(
        &self,
        cfgs: &[RunConfig],
        with_state: bool,
    ) -> Result<Vec<(PointResult, Vec<f64>)>, GpuError> {
        let mut groups: HashMap<KernelShape, Vec<usize>> = HashMap::new();
        for (i, c) in cfgs.iter().enumerate() {
            groups
                .entry(KernelShape::of(&c.params))
                .or_default()
                .push(i);
        }
        let mut out: Vec<Option<(PointResult, Vec<f64>)>> = vec![None; cfgs.len()];
        let mut keys: Vec<_> = groups.keys().copied().collect();
        keys.sort();
        for key in keys {
            let idx = &groups[&key];
            let cap = self.max_batch(key.n_legs, key.n_nodes);
            for chunk in idx.chunks(cap) {
                let sub: Vec<&RunConfig> = chunk.iter().map(|&i| &cfgs[i]).collect();
                for (r, &i) in self.run_group(&sub, with_state)?.into_iter().zip(chunk) {
                    out[i] = Some(r);
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|r| r.expect("every instance ran"))
            .collect())
    }

    /// One batch of instances of the same shape: plan, upload, advance (continuing
    /// instances in compact batches), finish; q, v are returned too when `with_state`.
    fn run_group(
        &self,
        cfgs: &[&RunConfig],
        with_state: bool,
    ) -> Result<Vec<(PointResult, Vec<f64>)>, GpuError> {
        let start = Instant::now();
        let mut budgets = Budgets::new(cfgs);
        let precision = self.ctx.precision;
        let shape = KernelShape::of(&cfgs[0].params);
        let lay = shape.state(precision);
        let b = cfgs.len();
        let pipeline = self.pipeline(shape)?;

        let (mut plans, mats) = plan_batch(cfgs, shape);
        let state = initial_state(&plans, lay);
        let mats_buf = self.upload_matrices(&mats);
        let batch = Batch {
            pipeline: &pipeline,
            mats: &mats_buf,
            lay,
            with_state,
        };
        let (state, status) = self.advance(&batch, cfgs, &mut plans, state, 0, &mut budgets)?;
        let wall = start.elapsed().as_secs_f64() / b as f64;
        Ok(cfgs
            .iter()
            .enumerate()
            .map(|(i, cfg)| {
                let qv = if with_state {
                    final_qv(&state, lay, b, i)
                } else {
                    Vec::new()
                };
                let stop = budgets.stopped_at(i);
                (
                    finish_instance(cfg, &plans[i], lay, &state, b, i, status[i], stop, wall),
                    qv,
                )
            })
            .collect())
    }

    /// The batch's FE matrix sets as a storage buffer in the kernel's precision (read by
    /// every instance, uploaded once).
    fn upload_matrices(&self, mats: &[f64]) -> wgpu::Buffer {
        self.ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("mats"),
                contents: &reals(mats, self.ctx.precision),
                usage: wgpu::BufferUsages::STORAGE,
            })
    }

    /// Advance `cfgs` (their plans and host copy of the state, SoA) from step
    /// `first_step` to the end of their schedules on the device, each within its budget
    /// (`budgets`, indexed as `cfgs`); with `--until-settled` the instances that
    /// continue are gathered into a fresh, compact batch (grouped by the step they
    /// ended at) and advanced further, so a continuing instance never keeps its old
    /// workgroups busy. Returns the final state (every slot where it is needed later,
    /// else from the running sums on) and status words.
    fn advance(
        &self,
        batch: &Batch,
        cfgs: &[&RunConfig],
        plans: &mut [InstancePlan],
        state: Vec<f64>,
        first_step: u32,
        budgets: &mut Budgets,
    ) -> Result<(Vec<f64>, Vec<u32>), GpuError> {
        let b = cfgs.len();
        let precision = self.ctx.precision;
        let lay = batch.lay;
        let mut params: Vec<f64> = Vec::new();
        let mut legs: Vec<f64> = Vec::new();
        let ints: Vec<InstanceInts> = plans.iter().map(|p| p.ints()).collect();
        for pl in plans.iter() {
            params.extend_from_slice(&pl.params);
            legs.extend_from_slice(&pl.legs);
        }
        let dev = &self.ctx.device;
        let storage = |label: &str, bytes: &[u8], extra: wgpu::BufferUsages| {
            dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage: wgpu::BufferUsages::STORAGE | extra,
            })
        };
        let none = wgpu::BufferUsages::empty();
        let params_buf = storage("instances", &reals(&params, precision), none);
        let ints_buf = storage("ints", bytemuck::cast_slice(&ints), none);
        let legs_buf = storage("legs", &reals(&legs, precision), none);
        let state_bytes = reals(&state, precision);
        let state_buf = storage("state", &state_bytes, wgpu::BufferUsages::COPY_SRC);
        let status_buf = storage(
            "status",
            bytemuck::cast_slice(&vec![0u32; b]),
            // COPY_DST: a budget stop is written between dispatches.
            wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        );
        let ctl_buf = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("control"),
            size: std::mem::size_of::<Control>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("metachron batch"),
            layout: &batch.pipeline.get_bind_group_layout(0),
            entries: &[
                entry(0, &ctl_buf),
                entry(1, &params_buf),
                entry(2, &ints_buf),
                entry(3, &legs_buf),
                entry(4, batch.mats),
                entry(5, &state_buf),
                entry(6, &status_buf),
            ],
        });
        let totals: Vec<u32> = plans
            .iter()
            .map(|p| p.sched.total_steps().min(u32::MAX as usize - 1) as u32)
            .collect();
        let run = Dispatch {
            pipeline: batch.pipeline,
            bind: &bind,
            ctl: &ctl_buf,
            status: &status_buf,
            batch: b as u32,
            groups: (b as u32).div_ceil(robots_per_workgroup(lay.n_legs) as u32),
        };
        let last_step = totals.iter().copied().max().unwrap_or(0);
        self.dispatch_steps(&run, first_step, last_step, budgets, &totals)?;
        let continuing = cfgs.iter().any(|c| c.until_settled.is_some());
        // SoA: slots [from, SLOTS) of every instance are one contiguous range; q and v
        // are read only where they are returned or carried into a continued batch.
        let from = if continuing || batch.with_state {
            0
        } else {
            lay.sums()
        };
        let word = self.word();
        let tail = self.read(
            &state_buf,
            (from * b) as u64 * word,
            state_bytes.len() as u64 - (from * b) as u64 * word,
        )?;
        let mut state = vec![0.0; from * b];
        state.extend(from_reals(&tail, precision));
        let mut status: Vec<u32> =
            bytemuck::pod_collect_to_vec(&self.read(&status_buf, 0, 4 * b as u64)?);
        if !continuing {
            return Ok((state, status));
        }
        // Which continue, grouped by the step their segment ended at (the next batch
        // starts right after it).
        let mut groups: Vec<(u32, Vec<usize>)> = Vec::new();
        for i in extend_unsettled(cfgs, plans, lay, &state, &status, budgets) {
            match groups.iter_mut().find(|(t, _)| *t == totals[i]) {
                Some((_, g)) => g.push(i),
                None => groups.push((totals[i], vec![i])),
            }
        }
        let slots = lay.slots();
        for (t, idx) in groups {
            let c = idx.len();
            let mut sub = vec![0.0; slots * c];
            for s in 0..slots {
                for (j, &i) in idx.iter().enumerate() {
                    sub[s * c + j] = state[s * b + i];
                }
            }
            let sub_cfgs: Vec<&RunConfig> = idx.iter().map(|&i| cfgs[i]).collect();
            let mut sub_plans: Vec<InstancePlan> = idx.iter().map(|&i| plans[i].clone()).collect();
            let mut sub_budgets = budgets.subset(&idx);
            let (sub_state, sub_status) = self.advance(
                batch,
                &sub_cfgs,
                &mut sub_plans,
                sub,
                t + 1,
                &mut sub_budgets,
            )?;
            for (j, &i) in idx.iter().enumerate() {
                plans[i] = sub_plans[j].clone();
                status[i] = sub_status[j];
                budgets.set_stopped(i, sub_budgets.stopped_at(j));
                for s in 0..slots {
                    state[s * b + i] = sub_state[s * c + j];
                }
            }
        }
        Ok((state, status))
    }

    /// Dispatch steps `from..=last` of every instance (an instance past its own last
    /// step idles), in chunks of [`GpuEngine::steps_per_dispatch`], cut at the step
    /// budgets; an instance past its budget is stopped between two dispatches, and
    /// dispatching ends when no instance runs any more. `totals`: each one's last step.
    fn dispatch_steps(
        &self,
        run: &Dispatch,
        from: u32,
        last: u32,
        budgets: &mut Budgets,
        totals: &[u32],
    ) -> Result<(), GpuError> {
        let dev = &self.ctx.device;
        let chunk = self.steps_per_dispatch();
        let mut begin = from;
        let mut dispatches = 0u64;
        while begin <= last {
            let end = budgets.cut(begin, begin.saturating_add(chunk).min(last + 1));
            let ctl = Control {
                batch: run.batch,
                step_begin: begin,
                step_end: end,
                _pad: 0,
            };
            self.ctx
                .queue
                .write_buffer(run.ctl, 0, bytemuck::bytes_of(&ctl));
            let mut enc = dev.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(run.pipeline);
                pass.set_bind_group(0, run.bind, &[]);
                pass.dispatch_workgroups(run.groups, 1, 1);
            }
            self.ctx.queue.submit([enc.finish()]);
            dispatches += 1;
            // Keep the queue (and its staged control writes) shallow.
            if dispatches % 16 == 0 {
                dev.poll(wgpu::PollType::wait_indefinitely())
                    .map_err(|e| GpuError::Execution(e.to_string()))?;
            }
            begin = end;
            if budgets.any() {
                self.stop_over_budget(run, budgets, end, totals)?;
                if !budgets.running(end, totals) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Stop the instances that are past their budget after steps `..end`: their status
    /// word becomes [`BUDGET_STOP`] before the next dispatch (queue order), unless the
    /// instance diverged in the dispatches before (its word already says so).
    fn stop_over_budget(
        &self,
        run: &Dispatch,
        budgets: &mut Budgets,
        end: u32,
        totals: &[u32],
    ) -> Result<(), GpuError> {
        let over = budgets.over(end, totals);
        if over.is_empty() {
            return Ok(());
        }
        let words: Vec<u32> =
            bytemuck::pod_collect_to_vec(&self.read(run.status, 0, 4 * run.batch as u64)?);
        for i in over {
            if words[i] != 0 {
                budgets.unstop(i);
            } else {
                self.ctx.queue.write_buffer(
                    run.status,
                    4 * i as u64,
                    bytemuck::bytes_of(&BUDGET_STOP),
                );
            }
        }
        Ok(())
    }

    fn read(&self, buf: &wgpu::Buffer, offset: u64, size: u64) -> Result<Vec<u8>, GpuError> {
        let dev = &self.ctx.device;
        let staging = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = dev.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(buf, offset, &staging, 0, size);
        self.ctx.queue.submit([enc.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        dev.poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Execution(e.to_string()))?;
        rx.recv()
            .map_err(|e| GpuError::Execution(e.to_string()))?
            .map_err(|e| GpuError::Execution(e.to_string()))?;
        let bytes = staging
            .get_mapped_range(..)
            .map_err(|e| GpuError::Execution(e.to_string()))?
            .to_vec();
        staging.unmap();
        Ok(bytes)
    }
}

/// Bind all of `buf` at `binding`: every buffer the kernel reads is bound whole.
fn entry(binding: u32, buf: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buf.as_entire_binding(),
    }
}

/// Instance `i`'s final q then v from the SoA `state` of a batch of `b`, adding q_lo to
/// q_hi where the compensated kernel keeps pairs, so continuation starts from full q.
fn final_qv(state: &[f64], lay: StateLayout, b: usize, i: usize) -> Vec<f64> {
    let lo = |k: usize| match lay.q_lo() {
        Some(at) if k < lay.nq() => state[(at + k) * b + i],
        _ => 0.0,
    };
    (0..2 * lay.nq())
        .map(|k| state[k * b + i] + lo(k))
        .collect()
}

/// Turn one instance's resident running sums into its metrics and status.
#[allow(clippy::too_many_arguments)]
fn finish_instance(
    cfg: &RunConfig,
    plan: &InstancePlan,
    lay: StateLayout,
    state: &[f64],
    b: usize,
    i: usize,
    status_word: u32,
    budget_stop: Option<u64>,
    wall: f64,
) -> PointResult {
    let at = |s: usize| state[s * b + i];
    let p = &cfg.params;
    let n = p.n_legs;
    let sched = &plan.sched;
    // The horizon of this segment (t_final unless the run was continued).
    let t_run = sched.time(sched.n_samples);
    let time = |k: usize| sched.time(k);
    let (status, last_k) = match (status_word, budget_stop) {
        // Stopped over budget after `done` steps (its metrics are blanked below).
        (BUDGET_STOP, Some(done)) => {
            let done = done as usize;
            let time = done as f64 * plan.h;
            (Status::BudgetExceeded { time }, sched.sample_at(done))
        }
        (0, _) => (Status::Ok, sched.n_samples),
        (k, _) => (
            Status::Diverged {
                time: time(k as usize - 1),
            },
            k as usize - 2,
        ),
    };
    let steps = match (status, budget_stop) {
        (Status::BudgetExceeded { .. }, Some(done)) => done as usize,
        _ if last_k == sched.n_samples => sched.total_steps(),
        _ => (last_k + 1) * sched.steps_per_sample,
    };
    let win_count = (last_k + 1).saturating_sub(sched.window_first);
    // The running sums of src/gpu/tally.rs.
    let sum = |s: RunningSum| at(lay.sum(s));
    let per_leg = |s: RunningSum| (0..n).map(|l| at(lay.sum(s) + l)).collect::<Vec<_>>();
    let pairs = |re: RunningSum, im: RunningSum| -> Vec<[f64; 2]> {
        per_leg(re)
            .into_iter()
            .zip(per_leg(im))
            .take(n - 1)
            .map(|(re, im)| [re, im])
            .collect()
    };
    let tally = Tally {
        first_y: Some(sum(tally::FIRST_Y)),
        last: Some(LastSample {
            t: time(last_k),
            y: sum(tally::LAST_Y),
            work: sum(tally::LAST_WORK),
            work_axo: sum(tally::LAST_WORK_AXO),
            work_coupling: sum(tally::LAST_WORK_COUPLING),
        }),
        max_inext: per_leg(tally::MAX_INEXT).into_iter().fold(0.0, f64::max),
        phi: per_leg(tally::PHI),
        win_count,
        win_start: (win_count > 0).then(|| (time(sched.window_first), sum(tally::WINDOW_Y))),
        phi_start: per_leg(tally::PHI_START),
        pair_sum: pairs(tally::PAIR_RE, tally::PAIR_IM),
        kuramoto_sum: sum(tally::KURAMOTO_SUM),
        contact_count: per_leg(tally::CONTACT_COUNT)
            .into_iter()
            .map(|c| c as usize)
            .collect(),
        t_run,
        // The kernel took the snapshot when it reached the second half's first sample.
        mid: (last_k >= sched.window_mid).then(|| TallyMid {
            t: time(sched.window_mid),
            count: sched.window_mid - sched.window_first,
            phi: per_leg(tally::MID_PHI),
            pair_sum: pairs(tally::MID_PAIR_RE, tally::MID_PAIR_IM),
        }),
    };
    let acc = MetricsAccumulator::from_tally(p, &cfg.metrics, tally);
    PointResult {
        metrics: match status {
            Status::BudgetExceeded { .. } => crate::simulate::blank_unless_ok(acc.finish(status)),
            _ => acc.finish(status),
        },
        stats: SolverStats {
            steps,
            fixed_step: plan.h,
            ..SolverStats::default()
        },
        samples: Vec::new(),
        wall_seconds: wall,
        backend: Backend::Gpu,
    }
}

/// Run `cfgs` on an engine; any device failure fails every instance of the call (and
/// is reported in each result), never the caller.
pub fn run_gpu_batch(
    engine: &GpuEngine,
    cfgs: &[RunConfig],
) -> Vec<Result<PointResult, SolverError>> {
    match engine.run(cfgs) {
        Ok(r) => r.into_iter().map(Ok).collect(),
        Err(e) => {
            let e = SolverError::Gpu(std::sync::Arc::new(e));
            cfgs.iter().map(|_| Err(e.clone())).collect()
        }
    }
}
