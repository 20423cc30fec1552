//! Environment variables (one test per concern, all in one binary run serially because they
//! change the process environment).

use asym_runtime::{list_devices, select_device, Error, Runtime, Transport};

#[test]
fn environment_selects_and_rejects() {
    let devices = list_devices().unwrap();
    assert!(
        !devices.is_empty(),
        "an OpenCL device is needed (pocl-opencl-icd)"
    );

    // An unknown ASYM_DEVICE is an error that lists the devices that exist.
    std::env::set_var("ASYM_DEVICE", "no-such-device-xyz");
    match Runtime::new() {
        Err(Error::DeviceNotFound { query, available }) => {
            assert_eq!(query, "no-such-device-xyz");
            assert_eq!(available.len(), devices.len());
            assert!(available.contains(&devices[0].label()));
        }
        other => panic!("expected DeviceNotFound, got {other:?}"),
    }
    let msg = select_device(None).unwrap_err().to_string();
    assert!(
        msg.contains(&devices[0].name),
        "the message lists the devices: {msg}"
    );

    // A name fragment, any case, selects by device or platform name.
    let first = &devices[0];
    std::env::set_var("ASYM_DEVICE", first.platform.to_uppercase());
    assert_eq!(select_device(None).unwrap().label(), first.label());
    // The API argument wins over the environment.
    std::env::set_var("ASYM_DEVICE", "no-such-device-xyz");
    assert_eq!(
        select_device(Some(&first.name)).unwrap().label(),
        first.label()
    );
    std::env::remove_var("ASYM_DEVICE");

    // ASYM_SVM: coarse is forced, garbage is rejected, fine is refused where missing.
    std::env::set_var("ASYM_SVM", "coarse");
    let rt = Runtime::new().unwrap();
    assert_eq!(rt.transport(), Transport::Coarse);
    assert_eq!(
        Transport::candidates(rt.profile()).unwrap(),
        vec![Transport::Coarse]
    );
    std::env::set_var("ASYM_SVM", "warp-speed");
    assert!(matches!(Runtime::new(), Err(Error::Flag { name, .. }) if name == "ASYM_SVM"));
    assert!(Transport::candidates(&devices[0]).is_err());
    std::env::set_var("ASYM_SVM", "fine");
    let d = select_device(None).unwrap();
    match Runtime::new() {
        Ok(rt) => assert_eq!(rt.transport(), Transport::Fine),
        Err(Error::Unsupported { lacks, .. }) => {
            assert!(Transport::Fine.check(&d).is_err(), "{lacks}")
        }
        Err(e) => panic!("unexpected {e}"),
    }
    std::env::remove_var("ASYM_SVM");

    std::env::set_var("ASYM_TIMEOUT_MS", "soon");
    assert!(matches!(Runtime::new(), Err(Error::Flag { name, .. }) if name == "ASYM_TIMEOUT_MS"));
    std::env::set_var("ASYM_TIMEOUT_MS", "1234");
    assert_eq!(Runtime::new().unwrap().timeout().as_millis(), 1234);
    std::env::remove_var("ASYM_TIMEOUT_MS");

    std::env::set_var("ASYM_SVM_CACHE_MB", "lots");
    assert!(matches!(Runtime::new(), Err(Error::Flag { name, .. }) if name == "ASYM_SVM_CACHE_MB"));
    std::env::set_var("ASYM_SVM_CACHE_MB", "0");
    let rt = Runtime::new().unwrap();
    assert_eq!(rt.svm_cache_limit(), 0);
    drop(rt.alloc::<u32>(100).unwrap());
    drop(rt.alloc::<u32>(100).unwrap());
    assert_eq!(rt.svm_stats().reused, 0, "a cache of 0 MiB keeps nothing");
    std::env::set_var("ASYM_SVM_CACHE_MB", "3");
    assert_eq!(Runtime::new().unwrap().svm_cache_limit(), 3 << 20);
    std::env::remove_var("ASYM_SVM_CACHE_MB");

    // Device times: off unless asked, `1` turns them on, anything else is refused.
    assert!(!Runtime::new().unwrap().device_times());
    std::env::set_var("ASYM_DEVICE_TIMES", "1");
    assert!(Runtime::new().unwrap().device_times());
    std::env::set_var("ASYM_DEVICE_TIMES", "yes");
    assert!(matches!(Runtime::new(), Err(Error::Flag { name, .. }) if name == "ASYM_DEVICE_TIMES"));
    std::env::remove_var("ASYM_DEVICE_TIMES");

    std::env::set_var("ASYM_LATENCY_THREADS", "3");
    assert_eq!(
        asym_runtime::LatencyPool::new(Default::default())
            .unwrap()
            .len(),
        3
    );
    std::env::set_var("ASYM_LATENCY_THREADS", "many");
    assert!(asym_runtime::LatencyPool::new(Default::default()).is_err());
    std::env::remove_var("ASYM_LATENCY_THREADS");
}

#[test]
fn a_device_without_what_a_transport_needs_is_named() {
    // Take a real profile and lower its capabilities, as a driver without SVM would report.
    // (No environment here: the other test of this binary changes it.)
    let mut d = list_devices().unwrap().remove(0);
    d.svm = asym_runtime::SvmLevel::None;
    for t in [Transport::Fine, Transport::Coarse] {
        let e = t.check(&d).unwrap_err().to_string();
        assert!(e.contains(&d.name) && e.contains("lacks"), "{e}");
    }
    let e = Transport::choose(&d, None).unwrap_err().to_string();
    assert!(e.contains("shared virtual memory"), "{e}");
    d.svm = asym_runtime::SvmLevel::Coarse;
    assert_eq!(Transport::supported_by(&d), vec![Transport::Coarse]);
    assert!(Transport::Fine
        .check(&d)
        .unwrap_err()
        .to_string()
        .contains("fine-grained"));
}
