//! Which rank owns each vertex of a distributed search ([`VertexPartition`]): a 1-D
//! partition, as Graph500's reference SSSP cuts its graph.

use asym_runtime::{Error, Result};

/// Which rank owns each vertex: blocks of consecutive vertices dealt to the ranks in turn
/// (block-cyclic; blocks of `vertices / parts` give one range per rank,
/// [`VertexPartition::ranges`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexPartition {
    vertices: usize,
    parts: usize,
    block: usize,
}

impl VertexPartition {
    /// One contiguous range of about `vertices / parts` per rank (blocks that large): the
    /// default. In breadth-first order a range is a band of distance shells, and on a
    /// road-like graph (4,194,304 vertices over 4 ranks of 4 threads, H200x4 host) ranges
    /// took 348 ms where blocks of 131,072 took 473 and of 1,024 1,150 ms: smaller blocks
    /// spread the search's wave over the ranks but cut many more edges (17,552 relaxations
    /// sent against 163,083 and 11.9 M) and expand vertices again when better distances
    /// arrive late. On a Kronecker graph the last ranges hold the unreached vertices and
    /// idle, yet ranges match blocks of 4,096 (150 against 147 ms at scale 20 on 4 ranks):
    /// the blocks expand 1.8 times the vertices and send 3.2 times the relaxations.
    pub fn ranges(vertices: usize, parts: usize) -> Result<Self> {
        Self::block_cyclic(vertices, parts, vertices.div_ceil(parts.max(1)).max(1))
    }

    /// `vertices` dealt in blocks of `block` to `parts` ranks in turn.
    pub fn block_cyclic(vertices: usize, parts: usize, block: usize) -> Result<Self> {
        if parts == 0 || block == 0 || u32::try_from(vertices).is_err() {
            return Err(Error::InvalidArgument(format!(
                "{vertices} vertices in blocks of {block} over {parts} parts: both at least 1 \
                 and vertices below 2^32"
            )));
        }
        Ok(VertexPartition {
            vertices,
            parts,
            block,
        })
    }

    /// Ranks (parts).
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// Vertices of the whole graph.
    pub fn vertices(&self) -> usize {
        self.vertices
    }

    /// The rank that owns vertex `v`.
    pub fn owner(&self, v: u32) -> usize {
        (v as usize / self.block) % self.parts
    }

    /// `v`'s place among its owner's vertices (in increasing order).
    pub fn local(&self, v: u32) -> usize {
        let v = v as usize;
        (v / (self.block * self.parts)) * self.block + v % self.block
    }

    /// The vertices rank `part` owns, in increasing order.
    pub fn owned(&self, part: usize) -> impl Iterator<Item = usize> + '_ {
        let stride = self.block * self.parts;
        (part * self.block..self.vertices)
            .step_by(stride)
            .flat_map(move |start| start..(start + self.block).min(self.vertices))
    }

    /// How many vertices rank `part` owns.
    pub fn owned_count(&self, part: usize) -> usize {
        let stride = self.block * self.parts;
        let full = self.vertices / stride * self.block;
        let rest = self.vertices % stride;
        full + rest.saturating_sub(part * self.block).min(self.block)
    }

    /// Every rank's values of its own vertices, concatenated in rank order, put back in
    /// vertex order.
    pub fn assemble<T: Copy + Default>(&self, by_rank: &[T]) -> Result<Vec<T>> {
        if by_rank.len() != self.vertices {
            return Err(Error::InvalidArgument(format!(
                "{} values gathered for {} vertices",
                by_rank.len(),
                self.vertices
            )));
        }
        let mut out = vec![T::default(); self.vertices];
        let mut at = 0;
        for part in 0..self.parts {
            for v in self.owned(part) {
                out[v] = by_rank[at];
                at += 1;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::VertexPartition;

    /// Every vertex dealt once: owner, local place, counts and assembly agree.
    fn deals_every_vertex_once(p: &VertexPartition, what: &str) {
        let (n, parts) = (p.vertices(), p.parts());
        let mut seen = vec![0u32; n];
        let mut by_rank = Vec::new();
        for part in 0..parts {
            let owned: Vec<usize> = p.owned(part).collect();
            assert_eq!(owned.len(), p.owned_count(part), "{what}");
            for (i, &v) in owned.iter().enumerate() {
                assert_eq!(p.owner(v as u32), part, "{what}: vertex {v}");
                assert_eq!(p.local(v as u32), i, "{what}: vertex {v}");
                seen[v] += 1;
            }
            by_rank.extend(owned.iter().map(|&v| v as u64 * 3));
        }
        assert!(seen.iter().all(|&c| c == 1), "{what}");
        let assembled = p.assemble(&by_rank).unwrap();
        assert!(assembled
            .iter()
            .enumerate()
            .all(|(v, &x)| x == v as u64 * 3));
    }

    #[test]
    fn block_cyclic_partitions_deal_every_vertex_once() {
        for (n, parts, block) in [
            (0, 1, 1),
            (1, 4, 1),
            (10, 3, 2),
            (1000, 4, 64),
            (1001, 3, 7),
        ] {
            let p = VertexPartition::block_cyclic(n, parts, block).unwrap();
            deals_every_vertex_once(&p, &format!("{n} {parts} {block}"));
        }
        assert!(VertexPartition::block_cyclic(10, 0, 4).is_err());
        assert!(VertexPartition::block_cyclic(10, 2, 4)
            .unwrap()
            .assemble(&[1u32; 9])
            .is_err());
    }
}
