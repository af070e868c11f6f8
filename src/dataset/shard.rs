//! A dataset's shard layout: shard `index` of `count`, each written by one process
//! into its own `shard=K` directory.

/// A shard layout or a shard that cannot be used (the message names the argument or
/// the environment variable that gave it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShardError(String);

/// A slice of a sweep: shard `index` (0-based) of `count`, by point id modulo `count`
/// (round robin, so every shard gets a similar mix of cheap and costly points).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl Shard {
    /// Parse `K/N` (K = 0..N-1).
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let bad = || {
            ShardError(format!(
                "--shard `{text}`: expected K/N with N >= 1 and K in [0, N-1], e.g. 0/4"
            ))
        };
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let k: usize = k.trim().parse().map_err(|_| bad())?;
        let n: usize = n.trim().parse().map_err(|_| bad())?;
        Shard::new(k, n).map_err(|_| bad())
    }

    pub fn new(index: usize, count: usize) -> Result<Shard, ShardError> {
        if count == 0 || index >= count {
            return Err(ShardError(format!(
                "shard {index}/{count}: allowed is N >= 1 and K in [0, N-1]"
            )));
        }
        Ok(Shard { index, count })
    }

    /// The shard of a SLURM job array task, from `SLURM_ARRAY_TASK_ID`,
    /// `SLURM_ARRAY_TASK_COUNT` and (when set) `SLURM_ARRAY_TASK_MIN`; `None` outside one.
    pub fn from_slurm(env: impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, ShardError> {
        let (id, count) = match (env("SLURM_ARRAY_TASK_ID"), env("SLURM_ARRAY_TASK_COUNT")) {
            (Some(id), Some(count)) => (id, count),
            (None, _) => return Ok(None),
            // Running the whole sweep in every task would write it N times over.
            (Some(id), None) => {
                return Err(ShardError(format!(
                    "SLURM_ARRAY_TASK_ID = {id} is set without SLURM_ARRAY_TASK_COUNT (an older \
                     Slurm?): pass --shard {id}/N (or set METACHRON_SHARDS=N in the batch script)"
                )))
            }
        };
        let num = |name: &str, v: &str| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| ShardError(format!("{name} = `{v}`: expected a non-negative integer")))
        };
        let id = num("SLURM_ARRAY_TASK_ID", &id)?;
        let count = num("SLURM_ARRAY_TASK_COUNT", &count)?;
        let min = match env("SLURM_ARRAY_TASK_MIN") {
            Some(m) => num("SLURM_ARRAY_TASK_MIN", &m)?,
            None => 0,
        };
        let index = id.checked_sub(min).ok_or_else(|| {
            ShardError(format!(
                "SLURM_ARRAY_TASK_ID = {id} is below SLURM_ARRAY_TASK_MIN = {min}"
            ))
        })?;
        Shard::new(index, count).map(Some).map_err(|_| {
            ShardError(format!(
                "SLURM array task {id} (min {min}) of {count}: use a contiguous array \
                 (--array=0-{}) so that tasks map to shards 0..{}",
                count.saturating_sub(1),
                count.saturating_sub(1)
            ))
        })
    }

    pub fn contains(&self, point_id: u64) -> bool {
        point_id % self.count as u64 == self.index as u64
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}
