//! Static resource budgets read from naga's IR of a generated kernel: what an invocation
//! keeps in private memory, whether anything indexes a private array with a run-time
//! index (which forces it out of registers into local memory), whether the step loop
//! touches the read-write state in global memory, and how many loops there are (what a
//! software adapter's per-invocation loop budget counts). tests in `shader.rs` hold
//! every generated shape to them.

use naga::{AddressSpace, Block, Expression, Function, Handle, Module, Statement, StorageAccess};

/// The kernel's private-memory budget per invocation in f64: 1 KiB, about the 255
/// 32-bit registers an NVIDIA thread can hold.
pub const PRIVATE_BYTES_BUDGET: u32 = 1024;

/// What [`measure`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Budget {
    /// Bytes of function- and private-space variables: the entry point's locals plus
    /// those of every other function (as if all were live at once: an upper bound).
    pub private_bytes: u32,
    /// Accesses with a run-time index into a private array, as "function: variable".
    pub dynamic_private_indexing: Vec<String>,
    /// Loads or stores of read-write storage (the state) inside a loop, or inside a
    /// function called from one, as "function: global".
    pub storage_access_in_loops: Vec<String>,
    /// Bytes of workgroup-shared variables (wgpu's default limit is 16 KiB).
    pub workgroup_bytes: u32,
    /// Loop statements in all functions, and the deepest nesting.
    pub loops: usize,
    pub max_loop_depth: usize,
}

fn all_functions(module: &Module) -> Vec<(String, &Function)> {
    let mut out: Vec<(String, &Function)> = module
        .functions
        .iter()
        .map(|(_, f)| (f.name.clone().unwrap_or_default(), f))
        .collect();
    for ep in &module.entry_points {
        out.push((ep.name.clone(), &ep.function));
    }
    out
}

/// The variable an access chain starts from.
enum Root {
    Local(Handle<naga::LocalVariable>),
    Global(Handle<naga::GlobalVariable>),
    /// A value (not a pointer), e.g. a `let` array.
    Value(Handle<Expression>),
}

fn root(f: &Function, mut e: Handle<Expression>) -> Root {
    loop {
        match f.expressions[e] {
            Expression::Access { base, .. } | Expression::AccessIndex { base, .. } => e = base,
            Expression::LocalVariable(h) => return Root::Local(h),
            Expression::GlobalVariable(h) => return Root::Global(h),
            _ => return Root::Value(e),
        }
    }
}

fn is_read_write_storage(module: &Module, f: &Function, e: Handle<Expression>) -> Option<String> {
    if let Root::Global(g) = root(f, e) {
        let var = &module.global_variables[g];
        if let AddressSpace::Storage { access } = var.space {
            if access.contains(StorageAccess::STORE) {
                return Some(var.name.clone().unwrap_or_default());
            }
        }
    }
    None
}

/// Read-write storage touched anywhere in `f` (and in what it calls).
fn storage_in_function(module: &Module, f: &Function, out: &mut Vec<String>, name: &str) {
    storage_in_block(module, f, &f.body, true, out, name);
}

/// Walk a block; record storage accesses when `inside` a loop, and recurse into calls
/// made there.
fn storage_in_block(
    module: &Module,
    f: &Function,
    block: &Block,
    inside: bool,
    out: &mut Vec<String>,
    name: &str,
) {
    for stmt in block.iter() {
        match stmt {
            Statement::Emit(range) if inside => {
                for e in range.clone() {
                    if let Expression::Load { pointer } = f.expressions[e] {
                        if let Some(g) = is_read_write_storage(module, f, pointer) {
                            out.push(format!("{name}: load {g}"));
                        }
                    }
                }
            }
            Statement::Store { pointer, .. } if inside => {
                if let Some(g) = is_read_write_storage(module, f, *pointer) {
                    out.push(format!("{name}: store {g}"));
                }
            }
            Statement::Call { function, .. } if inside => {
                let callee = &module.functions[*function];
                let cname = callee.name.clone().unwrap_or_default();
                storage_in_function(module, callee, out, &cname);
            }
            Statement::Block(b) => storage_in_block(module, f, b, inside, out, name),
            Statement::If { accept, reject, .. } => {
                storage_in_block(module, f, accept, inside, out, name);
                storage_in_block(module, f, reject, inside, out, name);
            }
            Statement::Switch { cases, .. } => {
                for c in cases {
                    storage_in_block(module, f, &c.body, inside, out, name);
                }
            }
            Statement::Loop {
                body, continuing, ..
            } => {
                storage_in_block(module, f, body, true, out, name);
                storage_in_block(module, f, continuing, true, out, name);
            }
            _ => {}
        }
    }
}

/// (loops, deepest nesting) of a block.
fn loops_in(block: &Block, depth: usize) -> (usize, usize) {
    let mut count = 0;
    let mut deepest = depth;
    for stmt in block.iter() {
        let (inner, d): (Vec<&Block>, usize) = match stmt {
            Statement::Block(b) => (vec![b], depth),
            Statement::If { accept, reject, .. } => (vec![accept, reject], depth),
            Statement::Switch { cases, .. } => (cases.iter().map(|c| &c.body).collect(), depth),
            Statement::Loop {
                body, continuing, ..
            } => {
                count += 1;
                (vec![body, continuing], depth + 1)
            }
            _ => continue,
        };
        for b in inner {
            let (c, m) = loops_in(b, d);
            count += c;
            deepest = deepest.max(m);
        }
    }
    (count, deepest)
}

/// Read the budgets of a validated module.
pub fn measure(module: &Module, info: &naga::valid::ModuleInfo) -> Budget {
    let gctx = module.to_ctx();
    let mut b = Budget::default();
    for (_, g) in module.global_variables.iter() {
        let size = module.types[g.ty].inner.size(gctx);
        match g.space {
            AddressSpace::Private => b.private_bytes += size,
            AddressSpace::WorkGroup => b.workgroup_bytes += size,
            _ => {}
        }
    }
    let functions = all_functions(module);
    let infos: Vec<&naga::valid::FunctionInfo> = module
        .functions
        .iter()
        .map(|(h, _)| &info[h])
        .chain((0..module.entry_points.len()).map(|k| info.get_entry_point(k)))
        .collect();
    for ((name, f), fi) in functions.iter().zip(infos) {
        for (_, var) in f.local_variables.iter() {
            b.private_bytes += module.types[var.ty].inner.size(gctx);
        }
        for (_, e) in f.expressions.iter() {
            let Expression::Access { base, .. } = *e else {
                continue;
            };
            let private = match root(f, base) {
                Root::Local(h) => Some(f.local_variables[h].name.clone().unwrap_or_default()),
                Root::Global(g) => {
                    let var = &module.global_variables[g];
                    (var.space == AddressSpace::Private)
                        .then(|| var.name.clone().unwrap_or_default())
                }
                // Indexing an array value: backends put the value in private memory.
                Root::Value(v) => {
                    let ty = fi[v].ty.inner_with(&module.types);
                    matches!(ty, naga::TypeInner::Array { .. }).then(|| "an array value".into())
                }
            };
            if let Some(var) = private {
                b.dynamic_private_indexing.push(format!("{name}: {var}"));
            }
        }
        let (count, depth) = loops_in(&f.body, 0);
        b.loops += count;
        b.max_loop_depth = b.max_loop_depth.max(depth);
        let mut found = Vec::new();
        storage_in_block(module, f, &f.body, false, &mut found, name);
        b.storage_access_in_loops.extend(found);
    }
    b
}

/// What one invocation issues, counted statically from the IR (every branch as if
/// taken): floating-point operations per step (the step loop outside its output-sample
/// branch) and per output sample (inside it), and loads from read-only storage (the
/// matrices and per-instance constants) per step. Calls count their callee's work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    pub step_flops: u32,
    pub sample_flops: u32,
    pub step_loads: u32,
}

/// Which part of the loop a statement belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Outside,
    Step,
    Sample,
}

/// Flops of one expression: +, −, ×, ÷ and sqrt count one per component, fma two.
fn flops_of(
    module: &Module,
    f: &Function,
    fi: &naga::valid::FunctionInfo,
    e: Handle<Expression>,
) -> u32 {
    let width = |h: Handle<Expression>| match fi[h].ty.inner_with(&module.types) {
        naga::TypeInner::Scalar(s) if s.kind == naga::ScalarKind::Float => 1,
        naga::TypeInner::Vector { size, scalar } if scalar.kind == naga::ScalarKind::Float => {
            *size as u32
        }
        _ => 0,
    };
    match f.expressions[e] {
        Expression::Binary { op, .. } => {
            use naga::BinaryOperator as B;
            match op {
                B::Add | B::Subtract | B::Multiply | B::Divide => width(e),
                _ => 0,
            }
        }
        Expression::Math { fun, .. } => match fun {
            naga::MathFunction::Fma => 2 * width(e),
            naga::MathFunction::Sqrt => width(e),
            _ => 0,
        },
        _ => 0,
    }
}

struct Counter<'a> {
    module: &'a Module,
    info: &'a naga::valid::ModuleInfo,
    work: Work,
}

impl Counter<'_> {
    fn add(&mut self, part: Part, flops: u32, loads: u32) {
        match part {
            Part::Outside => {}
            Part::Step => {
                self.work.step_flops += flops;
                self.work.step_loads += loads;
            }
            Part::Sample => self.work.sample_flops += flops,
        }
    }

    fn block(&mut self, f: &Function, fi: &naga::valid::FunctionInfo, block: &Block, part: Part) {
        for stmt in block.iter() {
            match stmt {
                Statement::Emit(range) => {
                    for e in range.clone() {
                        let flops = flops_of(self.module, f, fi, e);
                        let load = match f.expressions[e] {
                            Expression::Load { pointer } => match root(f, pointer) {
                                Root::Global(g) => matches!(
                                    self.module.global_variables[g].space,
                                    AddressSpace::Storage { access } if !access.contains(StorageAccess::STORE)
                                ) as u32,
                                _ => 0,
                            },
                            _ => 0,
                        };
                        self.add(part, flops, load);
                    }
                }
                Statement::Call { function, .. } if part != Part::Outside => {
                    let callee = &self.module.functions[*function];
                    self.block(callee, &self.info[*function], &callee.body, part);
                }
                Statement::Block(b) => self.block(f, fi, b, part),
                Statement::If {
                    condition,
                    accept,
                    reject,
                } => {
                    let sampling =
                        f.named_expressions.get(condition).map(String::as_str) == Some("sampling");
                    let inner = if sampling && part != Part::Outside {
                        Part::Sample
                    } else {
                        part
                    };
                    self.block(f, fi, accept, inner);
                    self.block(f, fi, reject, inner);
                }
                Statement::Switch { cases, .. } => {
                    for c in cases {
                        self.block(f, fi, &c.body, part);
                    }
                }
                Statement::Loop {
                    body, continuing, ..
                } => {
                    let inner = if part == Part::Outside {
                        Part::Step
                    } else {
                        part
                    };
                    self.block(f, fi, body, inner);
                    self.block(f, fi, continuing, inner);
                }
                _ => {}
            }
        }
    }
}

/// Count the work of the entry points' step loops ([`Work`]).
pub fn count_work(module: &Module, info: &naga::valid::ModuleInfo) -> Work {
    let mut c = Counter {
        module,
        info,
        work: Work::default(),
    };
    for (k, ep) in module.entry_points.iter().enumerate() {
        c.block(
            &ep.function,
            info.get_entry_point(k),
            &ep.function.body,
            Part::Outside,
        );
    }
    c.work
}
