//! The key types the structures share.

use asym_runtime::SvmElement;

/// A 32-bit key type the structures accept (`i32`, `u32`, `f32`): batch k-selection and the
/// device heap store its *ordered image*, an `i32` whose signed order is the key's order, so
/// one kernel serves every key type.
pub trait Key: SvmElement + std::fmt::Debug + PartialEq {
    /// NumPy dtype string (`<i4`, `<u4`, `<f4`).
    const DTYPE: &'static str;
    /// How `kernels/kselect.cl` maps the raw bits to the ordered form when keys are uploaded
    /// as they are (`-DKEY_MAP`): 0 as is, 1 flip the sign bit, 2 float total order.
    const KEY_MAP: u32;
    /// Maps the key to an `i32` whose signed order is the key's order.
    fn to_ordered(self) -> i32;
    /// Inverse of [`Key::to_ordered`].
    fn from_ordered(v: i32) -> Self;
    /// The key's unsigned image: the ordered form with its sign bit flipped, so that
    /// unsigned order, and a radix's digits most significant first, is the key's order (the
    /// device radix hands kept keys back as images).
    #[inline(always)]
    fn to_image(self) -> u32 {
        (self.to_ordered() as u32) ^ 0x8000_0000
    }
    /// Inverse of [`Key::to_image`].
    #[inline(always)]
    fn from_image(image: u32) -> Self {
        Self::from_ordered((image ^ 0x8000_0000) as i32)
    }
    /// `keys` as their ordered forms without a copy, where a key is its own ordered form
    /// (`i32`); `None` for the others, which map each key.
    fn as_ordered(keys: &[Self]) -> Option<&[i32]>
    where
        Self: Sized,
    {
        let _ = keys;
        None
    }
    /// Keys back from their ordered forms: in place where a key is its own ordered form
    /// (`i32`), else each mapped by rayon's threads.
    fn from_ordered_vec(ordered: Vec<i32>) -> Vec<Self>
    where
        Self: Sized + Send,
    {
        use rayon::prelude::*;
        ordered.into_par_iter().map(Self::from_ordered).collect()
    }
    /// The key's order (total), for references and tests.
    fn cmp_keys(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.to_ordered().cmp(&b.to_ordered())
    }
}

impl Key for i32 {
    const DTYPE: &'static str = "<i4";
    const KEY_MAP: u32 = 0;
    #[inline]
    fn to_ordered(self) -> i32 {
        self
    }
    #[inline]
    fn from_ordered(v: i32) -> Self {
        v
    }
    fn as_ordered(keys: &[i32]) -> Option<&[i32]> {
        Some(keys)
    }
    fn from_ordered_vec(ordered: Vec<i32>) -> Vec<i32> {
        ordered
    }
}

impl Key for u32 {
    const DTYPE: &'static str = "<u4";
    const KEY_MAP: u32 = 1;
    #[inline]
    fn to_ordered(self) -> i32 {
        (self ^ 0x8000_0000) as i32
    }
    #[inline]
    fn from_ordered(v: i32) -> Self {
        (v as u32) ^ 0x8000_0000
    }
}

impl Key for f32 {
    const DTYPE: &'static str = "<f4";
    const KEY_MAP: u32 = 2;
    #[inline]
    fn to_ordered(self) -> i32 {
        // total_cmp's trick: flip the magnitude bits of negatives.
        let b = self.to_bits() as i32;
        b ^ (((b >> 31) as u32) >> 1) as i32
    }
    #[inline]
    fn from_ordered(v: i32) -> Self {
        f32::from_bits((v ^ (((v >> 31) as u32) >> 1) as i32) as u32)
    }
}
