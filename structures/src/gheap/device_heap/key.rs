//! The key types the device heap holds ([`DeviceHeapKey`]) and the callbacks that write them
//! into memory bound for the device.

use std::borrow::Cow;

use asym_runtime::{Result, SvmElement};

use crate::key::Key;

/// Writes keys in their upload form into memory bound for the device
/// ([`DeviceGeneralizedHeap::insert_with`]).
pub type FillKeys<'a, T> = dyn Fn(&mut [<T as DeviceHeapKey>::Upload]) -> Result<()> + Sync + 'a;

/// Writes the keys of one insert into several heaps, each heap's part into its own slice
/// ([`DeviceGeneralizedHeap::insert_each_with`]).
pub type FillEach<'a, T> =
    dyn Fn(&mut [&mut [<T as DeviceHeapKey>::Upload]]) -> Result<()> + Sync + 'a;

/// A key type the device heap stores: its device form is a signed integer whose order is the
/// key's order.
pub trait DeviceHeapKey: Copy + Send + 'static {
    /// The device form (`int` or `long`).
    type Repr: SvmElement + Ord + Default + std::fmt::Debug;
    /// Build options naming the device form and its largest value.
    const CL_DEFINES: &'static str;
    /// Maps the key to its device form.
    fn to_repr(self) -> Self::Repr;
    /// Inverse of [`DeviceHeapKey::to_repr`].
    fn from_repr(r: Self::Repr) -> Self;
    /// How inserted keys travel to the device: scalar keys as they are (the kernel maps them
    /// to the device form as it loads a batch: `KEY_MAP`), pairs in the device form.
    type Upload: SvmElement + Default;
    /// The kernel's `-DKEY_MAP` for [`DeviceHeapKey::Upload`] (0: already the device form).
    const KEY_MAP: u32;
    /// The keys as uploaded: borrowed for scalar keys, so an insert converts nothing on the
    /// host before its launches.
    fn upload(keys: &[Self]) -> Cow<'_, [Self::Upload]>;
    /// Keys a DEL returned, as the device stored them (scalar keys: already in the caller's
    /// form, the map being its own inverse), into keys.
    fn download(stored: Vec<Self::Upload>) -> Vec<Self>;
    /// One key as uploaded.
    fn to_upload(self) -> Self::Upload;
    /// `keys` as the upload form where that is the keys' own form (scalar keys), so a
    /// download can land in them directly.
    fn as_upload_mut(keys: &mut [Self]) -> Option<&mut [Self::Upload]>;
}

macro_rules! scalar_key {
    ($($t:ty),*) => {$(
        impl DeviceHeapKey for $t {
            type Repr = i32;
            const CL_DEFINES: &'static str = "-DKEY_T=int -DKEY_MAX=INT_MAX";
            #[inline]
            fn to_repr(self) -> i32 {
                Key::to_ordered(self)
            }
            #[inline]
            fn from_repr(r: i32) -> Self {
                <$t as Key>::from_ordered(r)
            }
            type Upload = $t;
            const KEY_MAP: u32 = <$t as Key>::KEY_MAP;
            fn upload(keys: &[Self]) -> Cow<'_, [$t]> {
                Cow::Borrowed(keys)
            }
            fn download(stored: Vec<$t>) -> Vec<$t> {
                stored
            }
            #[inline]
            fn to_upload(self) -> $t {
                self
            }
            fn as_upload_mut(keys: &mut [$t]) -> Option<&mut [$t]> {
                Some(keys)
            }
        }
        /// A key with a 32-bit payload (a vertex, an item index), ordered by key, then payload.
        impl DeviceHeapKey for ($t, u32) {
            type Repr = i64;
            const CL_DEFINES: &'static str = "-DKEY_T=long -DKEY_MAX=LONG_MAX";
            #[inline]
            fn to_repr(self) -> i64 {
                ((Key::to_ordered(self.0) as i64) << 32) | self.1 as i64
            }
            #[inline]
            fn from_repr(r: i64) -> Self {
                (<$t as Key>::from_ordered((r >> 32) as i32), r as u32)
            }
            type Upload = i64;
            const KEY_MAP: u32 = 0;
            fn upload(keys: &[Self]) -> Cow<'_, [i64]> {
                Cow::Owned(keys.iter().map(|&k| k.to_repr()).collect())
            }
            fn download(stored: Vec<i64>) -> Vec<Self> {
                stored.into_iter().map(Self::from_repr).collect()
            }
            #[inline]
            fn to_upload(self) -> i64 {
                self.to_repr()
            }
            fn as_upload_mut(_: &mut [Self]) -> Option<&mut [i64]> {
                None
            }
        }
    )*};
}
scalar_key!(i32, u32, f32);
