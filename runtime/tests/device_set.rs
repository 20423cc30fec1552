//! `DeviceSet`: every device at once, or a list of name fragments, each member its own
//! runtime that runs kernels on its own SVM. The test script runs this file a second time
//! with `POCL_DEVICES="pthread pthread"`, so that PoCL lists two devices and the lists below
//! take two distinct ones.

use asym_runtime::{list_devices, DeviceSet, Error};

fn add_one_on_each(set: &DeviceSet) {
    for (i, rt) in set.members().iter().enumerate() {
        let n = 1000u32;
        let mut buf = rt.alloc::<u32>(n as usize).unwrap();
        buf.write(&vec![10 * i as u32; n as usize]).unwrap();
        let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one").unwrap();
        k.arg_svm("data", &buf).unwrap().arg_scalar("n", n).unwrap();
        k.launch(1024, None).unwrap().wait().unwrap();
        drop(k);
        assert!(
            buf.read().unwrap().iter().all(|&v| v == 10 * i as u32 + 1),
            "member {i}: {}",
            rt.profile().label()
        );
    }
}

#[test]
fn all_opens_every_device_and_each_runs_its_own_kernels() {
    let devices = list_devices().unwrap();
    let all = DeviceSet::open(Some("all")).unwrap();
    assert_eq!(all.len(), devices.len());
    add_one_on_each(&all);
}

#[test]
fn a_list_takes_distinct_devices_in_order() {
    let devices = list_devices().unwrap();
    let first = devices[0].platform.clone();
    let same: Vec<usize> = (0..devices.len())
        .filter(|&i| devices[i].matches(&first))
        .collect();
    let two = format!("{first},{first}");
    match DeviceSet::open(Some(&two)) {
        Ok(set) => {
            assert!(
                same.len() >= 2,
                "two members from {} matching devices",
                same.len()
            );
            assert_eq!(set.len(), 2);
            let (a, b) = (set.members()[0].profile(), set.members()[1].profile());
            assert!(!a.same_device(b), "the list took one device twice");
            add_one_on_each(&set);
        }
        Err(Error::DeviceNotFound { query, .. }) => {
            assert_eq!(same.len(), 1, "{query}");
        }
        Err(e) => panic!("{e}"),
    }
    let one = DeviceSet::open(Some(&first)).unwrap();
    assert_eq!(one.len(), 1);
    // A one-device program given a set's name takes the set's first member (a list) or the
    // default device (all).
    let listed = asym_runtime::select_device(Some(&two)).unwrap();
    assert!(listed.same_device(&devices[same[0]]));
    let default = asym_runtime::select_device(None).unwrap();
    assert!(asym_runtime::select_device(Some("all"))
        .unwrap()
        .same_device(&default));
}

#[test]
fn bad_lists_are_errors() {
    assert!(matches!(
        DeviceSet::open(Some("no-such-device-anywhere")),
        Err(Error::DeviceNotFound { .. })
    ));
    assert!(matches!(
        DeviceSet::open(Some("portable,,portable")),
        Err(e) if e.is_argument_error()
    ));
    let devices = list_devices().unwrap();
    let too_many = vec!["portable"; devices.len() + 1].join(",");
    assert!(DeviceSet::open(Some(&too_many)).is_err());
}
