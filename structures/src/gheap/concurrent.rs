//! The generalized heap shared by many host threads: the seed's TD-INS/TD-DEL heap.
//!
//! Every node has a lock; the root's lock also guards the partial buffer and the node count.
//! Both operations lock top-down, parent before child (an insert holds at most a node and its
//! child; a delete a node and its two children), so no cycle of waits can form. Each node's
//! lock carries the seed's state:
//!
//! - `Empty`: no node here (never filled, or removed by a delete);
//! - `Avail`: a present node with valid keys;
//! - `Target`: reserved by an insert that is still on its way down; its keys are not valid yet
//!   (a delete sifting down treats it as absent: the insert, behind it on every shared path,
//!   merges its batch through the nodes the delete changed);
//! - `Marked`: a delete needed the target's keys (it is the last node): the insert, on
//!   arriving, leaves its keys in the node and sets `Handed` instead of adding a node;
//! - `Handed`: the keys are there for the waiting delete, which takes them and empties the node.
//!
//! With bottom-up insertion (the seed's BU-INS/TD-DEL heap) an insert writes its batch into the
//! target node under the root lock, then *climbs*: to merge a node with its parent it must
//! lock the parent first (top-down order), so it lets go of the node in between and leaves it
//! `InsHold` (claimed). Rules that keep every violated parent–child edge owned by a climb:
//! - a node whose keys may be smaller than its parent's is claimed (`InsHold` or `DelMod`),
//!   and some climb will come through it;
//! - a delete that locks a claimed node leaves it `DelMod`; when a delete merges a node with
//!   a child whose keys came from a claimed node (small keys move up), it claims that node
//!   (`DelMod`) and climbs from it after its own sift-down; so does a delete that removes a
//!   `DelMod` last node (for the node's parent);
//! - a climb never merges into a claimed parent: it waits (locks released) until the owner
//!   has moved on, so keys from above never sink past an open violation; waits only go up;
//! - back on its node, a climb merges with the parent when the property fails, and goes on
//!   while it merged or the node was `DelMod`; it stops when the property held on an
//!   untouched node, when another climb already settled the node (`Avail`), or when a delete
//!   removed it (`Empty`).
//!
//! A climbing node is out of the root's reach, and it may carry keys that sat in the partial
//! buffer (an INS merges its batch with the buffer and sends the `K` smallest as the new node):
//! a DEL taken at the root meanwhile could return a key larger than one the heap held. The
//! seed's proof of BU-INS/TD-DEL leaves the partial buffer out; we close the gap with a count of
//! the climbs in flight: an INS owes its climb from inside its root critical section, a delete
//! owes one while it holds the node and the claimed child it merged (so the count cannot touch
//! zero in between), and a DEL enters its root section only when the count is zero (it waits
//! holding nothing; climbs never wait for a DEL to start). At a DEL's root section the heap is
//! then settled, and the DEL is linearized there as in TD-DEL. Insert-only and delete-only
//! phases never wait.
//!
//! Presence is decided by the state under the node's lock, never by a count read earlier: a
//! delete sifting down can meet a node that a later delete has already removed, or a target
//! whose insert has not arrived.
//!
//! Linearizability (the seed's theorem 3.2): every operation takes the root lock first and
//! does its whole effect on the root, the partial buffer and the count while holding it; what
//! happens below the root afterwards only restores the properties of sub-heaps that later
//! operations reach only after it (they lock top-down behind it). An operation therefore takes
//! effect at a point inside its root critical section, and those sections are totally ordered.
//!
//! `delete_min(n)` with `n ≤ K` is one DEL: the `K − n` keys of the root batch it does not
//! return stay, under the root lock, in the root or the partial buffer. Larger `n` and inserts
//! of more than `K` keys are sequences of such operations, each linearizable on its own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use asym_runtime::backoff::{Backoff, Deadline};
use asym_runtime::{Error, Result, Side};

use super::batch::{merge_and_sort, merge_into, position, tree_slots};
use super::{GeneralizedHeap, InsertDirection, MAX_BATCH};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Empty,
    Avail,
    Target,
    Marked,
    Handed,
    InsHold,
    DelMod,
}

impl State {
    /// Whether the node is present with valid keys.
    fn holds_keys(self) -> bool {
        matches!(self, State::Avail | State::InsHold | State::DelMod)
    }

    /// Whether a climb (module docs) owns the node: its keys may be smaller than its parent's.
    fn claimed(self) -> bool {
        matches!(self, State::InsHold | State::DelMod)
    }
}

#[derive(Debug)]
struct Node<T> {
    state: State,
    keys: Vec<T>,
}

/// What the root lock guards besides the root's keys.
#[derive(Debug)]
struct Root<T> {
    node: Node<T>,
    partial: Vec<T>,
    /// Full nodes present, including targets of inserts still on their way.
    count: usize,
}

/// A generalized min-heap (batches of `K` keys) for many host threads at once (TD-INS/TD-DEL,
/// or BU-INS/TD-DEL).
#[derive(Debug)]
pub struct ConcurrentGeneralizedHeap<T> {
    batch: usize,
    root: Mutex<Root<T>>,
    /// Node `i` (array position `i ≥ 1`) is `nodes[i - 1]`; whole levels (`tree_slots`).
    nodes: Vec<Mutex<Node<T>>>,
    /// Full nodes the heap may hold.
    max_nodes: usize,
    /// Bound of a delete's wait for an insert to hand over its keys, and of a climb's wait.
    timeout: Duration,
    direction: InsertDirection,
    /// BU-INS: climbs owed and not finished (module docs). Changed only by `owe_climb` and
    /// `ClimbDone`; SeqCst, though the lock order already makes every read that matters exact.
    climbs: AtomicUsize,
}

/// Ends one owed climb when dropped (also when the climb fails: the heap is broken then, and
/// a waiting DEL reports its own stall rather than hang).
struct ClimbDone<'a>(&'a AtomicUsize);

impl Drop for ClimbDone<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The node a delete holds while it looks at the children: the root (with its buffer and
/// count) first, then an ordinary node.
enum Parent<'a, T> {
    Root(MutexGuard<'a, Root<T>>),
    Node(MutexGuard<'a, Node<T>>),
}

impl<T> Parent<'_, T> {
    fn keys(&mut self) -> &mut Vec<T> {
        match self {
            Parent::Root(g) => &mut g.node.keys,
            Parent::Node(g) => &mut g.keys,
        }
    }
}

/// A node's keys become `src` (the node may never have held keys before).
fn set_keys<T: Copy>(keys: &mut Vec<T>, src: &[T]) {
    keys.clear();
    keys.extend_from_slice(src);
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a node lock leaves a heap whose properties may be broken; the
    // panic itself is reported to the caller of the operation that panicked, and later
    // operations still see consistent memory (every update is plain copying).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<T: Ord + Copy + Default + Send> ConcurrentGeneralizedHeap<T> {
    /// An empty heap of batches of `batch` keys (a power of two up to [`MAX_BATCH`]) holding at
    /// most `max_nodes` full nodes (plus the partial buffer).
    pub fn new(batch: usize, max_nodes: usize) -> Result<Self> {
        if !batch.is_power_of_two() || batch > MAX_BATCH {
            return Err(Error::out_of_range(
                "batch size",
                batch,
                format!("the generalized heap needs a power of two up to {MAX_BATCH}"),
            ));
        }
        let node = || Node {
            state: State::Empty,
            // Filled when the node first becomes present: a large capacity costs only the
            // lock words until it is used.
            keys: Vec::new(),
        };
        let mut nodes = Vec::new();
        add_nodes(&mut nodes, tree_slots(max_nodes.max(1)) - 1)?;
        Ok(ConcurrentGeneralizedHeap {
            batch,
            root: Mutex::new(Root {
                node: node(),
                partial: Vec::with_capacity(batch),
                count: 0,
            }),
            nodes,
            max_nodes: max_nodes.max(1),
            timeout: Duration::from_secs(30),
            direction: InsertDirection::TopDown,
            climbs: AtomicUsize::new(0),
        })
    }

    /// Sets how inserted batches travel: top-down (TD-INS, the default here) or bottom-up
    /// (BU-INS).
    pub fn with_insert_direction(mut self, direction: InsertDirection) -> Self {
        self.direction = direction;
        self
    }

    /// Keys per node.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Full nodes the heap can hold.
    pub fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    /// Keys in the heap (a snapshot under the root lock).
    pub fn len(&self) -> usize {
        let root = lock(&self.root);
        root.count * self.batch + root.partial.len()
    }

    /// Whether the heap holds no key (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The smallest key (a snapshot).
    pub fn peek(&self) -> Option<T> {
        let root = lock(&self.root);
        if root.count > 0 {
            Some(root.node.keys[0])
        } else {
            root.partial.first().copied()
        }
    }

    /// Room for `max_nodes` full nodes in all (between phases: needs exclusive access). An
    /// error where the host cannot hold their lock words; the heap is unchanged then.
    pub fn grow(&mut self, max_nodes: usize) -> Result<()> {
        let slots = tree_slots(self.max_nodes.max(max_nodes));
        let more = slots.saturating_sub(1 + self.nodes.len());
        add_nodes(&mut self.nodes, more)?;
        self.max_nodes = self.max_nodes.max(max_nodes);
        Ok(())
    }

    /// Inserts `keys` as INS operations of at most `K` keys each. Fails with
    /// [`Error::CapacityExceeded`] when a new node would not fit; the INS operations before it
    /// have taken effect, the refused one and the rest have not.
    pub fn insert(&self, keys: &[T]) -> Result<()> {
        let mut sorted = Vec::with_capacity(self.batch);
        for part in keys.chunks(self.batch) {
            sorted.clear();
            sorted.extend_from_slice(part);
            sorted.sort_unstable();
            self.insert_sorted(&sorted)?;
        }
        Ok(())
    }

    /// Removes `n` keys and returns them sorted (fewer if the heap runs empty). With `n ≤ K`
    /// this is one DEL: the `n` smallest keys at its linearization point. A larger `n` is a
    /// sequence of DELs, each linearizable on its own; inserts by other threads between them
    /// can be smaller than keys an earlier DEL of the sequence returned.
    pub fn delete_min(&self, n: usize) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(n.min(self.batch * 4));
        let mut dels = 0;
        while out.len() < n {
            let want = (n - out.len()).min(self.batch);
            let before = out.len();
            self.delete_batch(want, &mut out)?;
            dels += 1;
            if out.len() - before < want {
                // The heap held fewer keys at this DEL's linearization point: stop here, so a
                // request of at most K keys stays one DEL.
                break;
            }
        }
        if dels > 1 {
            out.sort_unstable();
        }
        Ok(out)
    }

    /// Moves the keys into a sequential heap (to check its properties or keep working alone).
    pub fn into_sequential(self) -> Result<GeneralizedHeap<T>> {
        let root = self.root.into_inner().unwrap_or_else(|p| p.into_inner());
        let nodes: Vec<Node<T>> = self
            .nodes
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
            .collect();
        let mut keys = Vec::with_capacity((root.count + 1) * self.batch);
        for i in 0..root.count {
            let pos = position(i);
            let node = if pos == 0 {
                &root.node
            } else {
                &nodes[pos - 1]
            };
            if pos != 0 && node.state != State::Avail {
                return Err(Error::corrupted(
                    "the concurrent heap",
                    format!(
                        "node {pos} was left in state {:?} by an unfinished operation",
                        node.state
                    ),
                ));
            }
            keys.push((pos, node.keys.clone()));
        }
        GeneralizedHeap::from_parts(self.batch, keys, root.partial)
    }

    fn node(&self, pos: usize) -> &Mutex<Node<T>> {
        &self.nodes[pos - 1]
    }

    /// One INS of at most `K` sorted keys (TD-INS).
    fn insert_sorted(&self, sorted: &[T]) -> Result<()> {
        let b = self.batch;
        let mut root = lock(&self.root);
        let mut combined = Vec::with_capacity(root.partial.len() + sorted.len());
        merge_into(&root.partial, sorted, &mut combined);
        let mut scratch = Vec::new();
        if combined.len() < b {
            root.partial = combined;
            if root.count > 0 {
                let Root { node, partial, .. } = &mut *root;
                merge_and_sort(&mut node.keys, partial, &mut scratch);
            }
            return Ok(());
        }
        if root.count == self.max_nodes() {
            return Err(Error::CapacityExceeded {
                what: format!("a concurrent generalized heap of batches of {b} keys"),
                capacity: self.max_nodes() * b + b - 1,
            });
        }
        root.partial = combined.split_off(b);
        let mut carried = combined;
        if root.count == 0 {
            set_keys(&mut root.node.keys, &carried);
            root.count = 1;
            return Ok(());
        }
        let target = position(root.count);
        root.count += 1;
        if self.direction == InsertDirection::BottomUp {
            {
                let mut node = lock(self.node(target));
                set_keys(&mut node.keys, &carried);
                node.state = State::InsHold;
            }
            self.owe_climb();
            let done = ClimbDone(&self.climbs);
            drop(root);
            let climbed = self.climb(target, &mut scratch);
            drop(done);
            return climbed;
        }
        lock(self.node(target)).state = State::Target;
        merge_and_sort(&mut root.node.keys, &mut carried, &mut scratch);
        // Down the insert path, hand over hand: lock the child, then release the parent.
        let depth = usize::BITS - 1 - (target + 1).leading_zeros();
        let mut held: Option<MutexGuard<'_, Node<T>>> = None;
        let mut root = Some(root);
        for level in 1..=depth {
            let pos = ((target + 1) >> (depth - level)) - 1;
            let mut node = lock(self.node(pos));
            drop(root.take());
            drop(held.take());
            if pos == target {
                set_keys(&mut node.keys, &carried);
                node.state = match node.state {
                    // A delete took this node as its last one and waits for the keys.
                    State::Marked => State::Handed,
                    State::Target => State::Avail,
                    s => unreachable!("an insert's target in state {s:?}"),
                };
                return Ok(());
            }
            merge_and_sort(&mut node.keys, &mut carried, &mut scratch);
            held = Some(node);
        }
        unreachable!("the insert path ends at its target")
    }

    /// One DEL (TD-DEL) returning at most `want` keys into `out`.
    fn delete_batch(&self, want: usize, out: &mut Vec<T>) -> Result<()> {
        let b = self.batch;
        let mut scratch = Vec::new();
        let mut root = self.lock_root_settled()?;
        if root.count == 0 {
            let take = want.min(root.partial.len());
            out.extend(root.partial.drain(..take));
            return Ok(());
        }
        let take = want.min(b);
        out.extend_from_slice(&root.node.keys[..take]);
        // The keys of the root batch not returned: smaller than everything else.
        let surplus: Vec<T> = root.node.keys[take..].to_vec();
        let mut spare = Vec::with_capacity(surplus.len() + root.partial.len());
        merge_into(&surplus, &root.partial, &mut spare);
        if spare.len() >= b {
            // The K smallest of surplus and buffer refill the root; the node count stays.
            root.partial = spare.split_off(b);
            set_keys(&mut root.node.keys, &spare);
        } else {
            root.partial = spare;
            let last = position(root.count - 1);
            root.count -= 1;
            if last == 0 {
                // The root was the only node: what is left lives in the buffer.
                return Ok(());
            }
            let (keys, duty) = self.take_last(last)?;
            set_keys(&mut root.node.keys, &keys);
            let Root { node, partial, .. } = &mut *root;
            merge_and_sort(&mut node.keys, partial, &mut scratch);
            let mut duties = self.sift_down(root, &mut scratch);
            duties.extend(duty);
            return self.climb_all(duties, &mut scratch);
        }
        let duties = self.sift_down(root, &mut scratch);
        self.climb_all(duties, &mut scratch)
    }

    /// One more climb in flight (a `ClimbDone` ends it).
    fn owe_climb(&self) {
        self.climbs.fetch_add(1, Ordering::SeqCst);
    }

    /// The root lock, taken when no climb is in flight (module docs; TD-INS never climbs).
    fn lock_root_settled(&self) -> Result<MutexGuard<'_, Root<T>>> {
        let deadline = Deadline::after(self.timeout);
        let mut backoff = Backoff::new();
        loop {
            if self.climbs.load(Ordering::SeqCst) == 0 {
                let root = lock(&self.root);
                // An INS owes its climb under the root lock, and a DEL owes one only while a
                // claimed node (so a counted climb) exists: zero here stays zero until the
                // root is let go.
                if self.climbs.load(Ordering::SeqCst) == 0 {
                    return Ok(root);
                }
            }
            if deadline.expired() {
                return Err(Error::Stalled {
                    side: Side::Host,
                    waiting_for: "finish the bottom-up climbs in flight".into(),
                    waited_ms: deadline.waited_ms(),
                    detail: "a delete waits for a settled heap".into(),
                });
            }
            backoff.snooze();
        }
    }

    /// The climbs a delete owes (shallowest first: a deeper one may wait on a shallower one).
    fn climb_all(&self, mut from: Vec<usize>, scratch: &mut Vec<T>) -> Result<()> {
        from.sort_unstable();
        // Each entry was counted when it was owed (`owe_climb`): its guard ends it here,
        // after the climb (a position owed twice climbs once).
        let owed: Vec<ClimbDone<'_>> = from.iter().map(|_| ClimbDone(&self.climbs)).collect();
        let mut last = None;
        for (pos, done) in from.into_iter().zip(owed) {
            if last != Some(pos) {
                self.climb(pos, scratch)?;
            }
            last = Some(pos);
            drop(done);
        }
        Ok(())
    }

    /// The keys of the last node, which leaves the heap; waits (bounded) for an insert still
    /// on its way to it.
    ///
    /// Also returns a node this delete must climb from: when the last node is `DelMod`, a
    /// delete moved keys from it up into its parent, and the climb that would have gone on
    /// from there finds its node gone; the parent is claimed here and the duty passes to this
    /// delete.
    fn take_last(&self, last: usize) -> Result<(Vec<T>, Option<usize>)> {
        {
            let mut node = lock(self.node(last));
            match node.state {
                State::Avail | State::InsHold => {
                    node.state = State::Empty;
                    return Ok((node.keys.clone(), None));
                }
                State::DelMod => {
                    node.state = State::Empty;
                    let keys = node.keys.clone();
                    drop(node);
                    let up = (last - 1) / 2;
                    if up == 0 {
                        return Ok((keys, None));
                    }
                    let mut parent = lock(self.node(up));
                    if !parent.state.holds_keys() {
                        return Ok((keys, None));
                    }
                    parent.state = State::DelMod;
                    // Owed while the root is held: no DEL starts before it is counted.
                    self.owe_climb();
                    return Ok((keys, Some(up)));
                }
                State::Target => node.state = State::Marked,
                s => {
                    return Err(Error::corrupted(
                        "the concurrent heap",
                        format!("the heap's last node {last} is in state {s:?}"),
                    ))
                }
            }
        }
        let deadline = Deadline::after(self.timeout);
        let mut backoff = Backoff::new();
        loop {
            {
                let mut node = lock(self.node(last));
                if node.state == State::Handed {
                    node.state = State::Empty;
                    return Ok((node.keys.clone(), None));
                }
            }
            if deadline.expired() {
                return Err(Error::Stalled {
                    side: Side::Host,
                    waiting_for: format!("hand over the keys of node {last}"),
                    waited_ms: deadline.waited_ms(),
                    detail: "the insert that reserved it did not arrive".into(),
                });
            }
            backoff.snooze();
        }
    }

    /// BU-INS's climb from `cur` (module docs).
    fn climb(&self, mut cur: usize, scratch: &mut Vec<T>) -> Result<()> {
        let b = self.batch;
        let deadline = Deadline::after(self.timeout);
        let mut backoff = Backoff::new();
        loop {
            let up = (cur - 1) / 2;
            let mut parent = if up == 0 {
                Parent::Root(lock(&self.root))
            } else {
                Parent::Node(lock(self.node(up)))
            };
            let mut node = lock(self.node(cur));
            let seen = node.state;
            if !seen.claimed() {
                // Removed by a delete (its keys went to the root), or settled by another climb.
                return Ok(());
            }
            if let Parent::Node(p) = &parent {
                if p.state.claimed() {
                    // Another climb owns the parent: wait until it has moved on.
                    drop(node);
                    drop(parent);
                    if deadline.expired() {
                        return Err(Error::Stalled {
                            side: Side::Host,
                            waiting_for: format!("move the climb at node {up} on"),
                            waited_ms: deadline.waited_ms(),
                            detail: "a bottom-up insert above did not finish".into(),
                        });
                    }
                    backoff.snooze();
                    continue;
                }
            }
            let parent_keys = parent.keys();
            let merged = parent_keys[b - 1] > node.keys[0];
            if merged {
                merge_and_sort(parent_keys, &mut node.keys, scratch);
            }
            node.state = State::Avail;
            if up == 0 || (!merged && seen == State::InsHold) {
                return Ok(());
            }
            match &mut parent {
                Parent::Node(p) if p.state.holds_keys() => p.state = State::InsHold,
                _ => return Ok(()),
            }
            cur = up;
        }
    }

    /// TD-DEL's propagation from the root: lock both children, merge them (the larger half
    /// back into the child whose largest key was larger), then merge the node with the other
    /// child while the property fails; release the parent once the child is locked. Returns
    /// the nodes it claimed because keys from a climb moved up into them (module docs).
    fn sift_down(&self, root: MutexGuard<'_, Root<T>>, scratch: &mut Vec<T>) -> Vec<usize> {
        let b = self.batch;
        let mut duties = Vec::new();
        let mut parent = Parent::Root(root);
        let mut pos = 0usize;
        loop {
            let (l, r) = (2 * pos + 1, 2 * pos + 2);
            let mut lg = (l <= self.nodes.len()).then(|| lock(self.node(l)));
            let mut rg = (r <= self.nodes.len()).then(|| lock(self.node(r)));
            // Keys from a climb among the children; tell its owner a delete has been here.
            let mut dirty = false;
            for g in [&mut lg, &mut rg].into_iter().flatten() {
                if g.state.claimed() {
                    dirty = true;
                    g.state = State::DelMod;
                }
            }
            let present = |g: &Option<MutexGuard<'_, Node<T>>>| {
                g.as_ref().is_some_and(|g| g.state.holds_keys())
            };
            let (child_pos, mut child) = match (present(&lg), present(&rg)) {
                (false, false) => return duties,
                (true, false) => (l, lg.expect("present")),
                (false, true) => (r, rg.expect("present")),
                (true, true) => {
                    let (mut lg, mut rg) = (lg.expect("present"), rg.expect("present"));
                    if lg.keys[b - 1] > rg.keys[b - 1] {
                        merge_and_sort(&mut rg.keys, &mut lg.keys, scratch);
                        (r, rg)
                    } else {
                        merge_and_sort(&mut lg.keys, &mut rg.keys, scratch);
                        (l, lg)
                    }
                }
            };
            let parent_keys = parent.keys();
            if parent_keys[b - 1] <= child.keys[0] {
                return duties;
            }
            merge_and_sort(parent_keys, &mut child.keys, scratch);
            if dirty {
                if let Parent::Node(p) = &mut parent {
                    // Small keys moved up into this node: it may now break its own parent.
                    p.state = State::DelMod;
                    // Owed while this node and the claimed child are held (module docs).
                    self.owe_climb();
                    duties.push(pos);
                }
            }
            pos = child_pos;
            parent = Parent::Node(child);
        }
    }
}

/// Appends `count` empty nodes to `nodes`, checked against the host's memory and reserved
/// fallibly first (a capacity the host cannot hold is an error, not an abort).
fn add_nodes<T>(nodes: &mut Vec<Mutex<Node<T>>>, count: usize) -> Result<()> {
    let what = format!("the lock words of {count} more generalized heap nodes");
    let bytes = (count as u64).saturating_mul(std::mem::size_of::<Mutex<Node<T>>>() as u64);
    asym_runtime::host_memory::ensure_available(bytes, &what)?;
    nodes
        .try_reserve_exact(count)
        .map_err(|_| Error::OutOfMemory(what))?;
    nodes.extend((0..count).map(|_| {
        Mutex::new(Node {
            state: State::Empty,
            keys: Vec::new(),
        })
    }));
    Ok(())
}
