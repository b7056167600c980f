use tar::{Builder, Header};

use crate::shell::Limits;
use crate::shell::fs::Node;
use crate::shell::testing::{container, container_with, run_in};

/// An archive of `(name, contents)` files as kube-rs builds one: GNU headers, names written as given.
fn archive(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = Builder::new(Vec::new());
    for (name, contents) in files {
        let mut header = Header::new_gnu();
        let field = &mut header.as_old_mut().name;
        field[..name.len()].copy_from_slice(name.as_bytes());
        header.set_size(contents.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append(&header, *contents).unwrap();
    }
    builder.into_inner().unwrap()
}

/// The member names of an archive.
fn names(archive: &[u8]) -> Vec<String> {
    tar::Archive::new(archive)
        .entries()
        .unwrap()
        .map(|e| String::from_utf8_lossy(&e.unwrap().path_bytes()).into_owned())
        .collect()
}

/// What is under `dir`, as paths relative to it and their contents.
fn tree(c: &crate::shell::ContainerEnv, dir: &str) -> Vec<(String, Node)> {
    c.files
        .walk(dir)
        .into_iter()
        .map(|(p, n)| (p[dir.len()..].to_owned(), n))
        .collect()
}

#[tokio::test]
async fn a_tree_archived_in_one_directory_is_extracted_alike_in_another() {
    let c = container();
    c.files.mkdir("/src/app/conf", true).unwrap();
    c.files
        .write("/src/app/conf/a.toml", b"a = 1\n", false)
        .unwrap();
    c.files
        .write("/src/app/run.sh", b"#!/bin/sh\n", false)
        .unwrap();
    c.files.mkdir("/dst", false).unwrap();
    let created = run_in(
        &c,
        &["tar", "cf", "/tmp/app.tar", "-C", "/src", "app"],
        None,
    )
    .await;
    assert_eq!((created.stderr.as_str(), created.status), ("", 0));
    let extracted = run_in(&c, &["tar", "-xf", "/tmp/app.tar", "-C", "/dst"], None).await;
    assert_eq!((extracted.stderr.as_str(), extracted.status), ("", 0));
    assert_eq!(tree(&c, "/dst/app"), tree(&c, "/src/app"));
    let listed = run_in(&c, &["tar", "tf", "/tmp/app.tar"], None).await;
    assert_eq!(
        listed.stdout,
        "app/\napp/conf/\napp/conf/a.toml\napp/run.sh\n"
    );
    let long = run_in(&c, &["tar", "tvf", "/tmp/app.tar"], None)
        .await
        .stdout;
    let first: Vec<&str> = long.lines().nth(2).unwrap().split_whitespace().collect();
    assert_eq!(
        (first[0], first[1], first[2], first[5]),
        ("-rw-r--r--", "root/root", "6", "app/conf/a.toml")
    );
}

#[tokio::test]
async fn gzipped_archives_round_trip_with_bundled_letters() {
    let c = container();
    c.files.mkdir("/data", false).unwrap();
    c.files
        .write("/data/f", &b"0123456789".repeat(100), false)
        .unwrap();
    let created = run_in(&c, &["tar", "cvzf", "/tmp/d.tgz", "/data"], None).await;
    assert_eq!(created.stdout, "data/\ndata/f\n");
    assert_eq!(
        created.stderr,
        "tar: Removing leading `/' from member names\n"
    );
    let packed = c.files.read("/tmp/d.tgz").unwrap();
    assert!(packed.starts_with(&[0x1f, 0x8b]) && packed.len() < 1000);
    c.files.mkdir("/out", false).unwrap();
    let extracted = run_in(&c, &["tar", "xzf", "/tmp/d.tgz", "-C", "/out"], None).await;
    assert_eq!(extracted.status, 0, "{}", extracted.stderr);
    assert_eq!(
        c.files.read("/out/data/f").unwrap(),
        b"0123456789".repeat(100)
    );
}

#[tokio::test]
async fn kube_rs_uploads_with_a_gnu_header_archive_on_stdin() {
    let c = container();
    let upload = archive(&[("foo.txt", b"hello from kube-rs\n")]);
    let ran = run_in(&c, &["tar", "xf", "-", "-C", "/"], Some(vec![&upload[..]])).await;
    assert_eq!((ran.stderr.as_str(), ran.status), ("", 0));
    let cat = run_in(&c, &["cat", "/foo.txt"], None).await;
    assert_eq!(cat.stdout, "hello from kube-rs\n");
}

#[tokio::test]
async fn kubectl_cp_copies_in_and_out_with_its_own_arguments() {
    let c = container();
    c.files.mkdir("/var/www", true).unwrap();
    let into = archive(&[("site/index.html", b"<h1>hi</h1>\n")]);
    let copied_in = run_in(
        &c,
        &[
            "tar",
            "--no-same-permissions",
            "--no-same-owner",
            "-xmf",
            "-",
            "-C",
            "/var/www",
        ],
        Some(vec![&into[..100], &into[100..]]),
    )
    .await;
    assert_eq!((copied_in.stderr.as_str(), copied_in.status), ("", 0));
    assert_eq!(
        c.files.read("/var/www/site/index.html").unwrap(),
        b"<h1>hi</h1>\n"
    );
    let copied_out = run_in(&c, &["tar", "cf", "-", "-C", "/var/www", "site"], None).await;
    assert_eq!((copied_out.stderr.as_str(), copied_out.status), ("", 0));
    let out = copied_out.stdout.into_bytes();
    assert_eq!(names(&out), ["site/", "site/index.html"]);
}

#[tokio::test]
async fn members_never_land_outside_the_containers_root() {
    let c = container();
    c.files.mkdir("/tmp/deep/dir", true).unwrap();
    let hostile = archive(&[
        ("../../etc/x", b"out"),
        ("/abs", b"abs"),
        ("a/../../b", b"no"),
    ]);
    let ran = run_in(
        &c,
        &["tar", "xf", "-", "-C", "/tmp/deep/dir"],
        Some(vec![&hostile[..]]),
    )
    .await;
    assert_eq!(ran.status, 2);
    assert_eq!(
        ran.stderr,
        "tar: Removing leading `../../' from member names\n\
         tar: Removing leading `/' from member names\n\
         tar: a/../../b: Member name contains '..'\n\
         tar: Exiting with failure status due to previous errors\n"
    );
    assert_eq!(c.files.read("/tmp/deep/dir/etc/x").unwrap(), b"out");
    assert_eq!(c.files.read("/tmp/deep/dir/abs").unwrap(), b"abs");
    assert!(c.files.get("/etc/x").is_none() && c.files.get("/tmp/b").is_none());
    // From the root, `..` has nowhere higher to go.
    let at_root = run_in(&c, &["tar", "xf", "-", "-C", "/"], Some(vec![&hostile[..]])).await;
    assert_eq!(at_root.status, 2);
    assert_eq!(c.files.read("/etc/x").unwrap(), b"out");
}

#[tokio::test]
async fn an_archive_bigger_than_the_files_may_hold_stops_with_no_space() {
    let c = container_with(Limits {
        file_bytes: 1024,
        ..Limits::default()
    });
    let big = archive(&[("small", b"fits"), ("big", &[7u8; 2000])]);
    let ran = run_in(&c, &["tar", "xf", "-", "-C", "/tmp"], Some(vec![&big[..]])).await;
    assert_eq!(ran.status, 2);
    assert!(
        ran.stderr
            .starts_with("tar: big: Cannot write: No space left on device\n"),
        "{}",
        ran.stderr
    );
    assert_eq!(c.files.read("/tmp/small").unwrap(), b"fits");
    assert!(c.files.get("/tmp/big").is_none());
}

#[tokio::test]
async fn usage_and_archive_errors_are_worded_as_gnu_tar() {
    let c = container();
    let cases: &[(&[&str], &str, &str, i32)] = &[
        (
            &["tar", "f", "x"],
            "",
            "tar: You must specify one of the '-Acdtrux', '--delete' or '--test-label' options\n",
            2,
        ),
        (
            &["tar", "cf", "-"],
            "",
            "tar: Cowardly refusing to create an empty archive\ntar: Try 'tar --help' or 'tar --usage' for more information.\n",
            2,
        ),
        (
            &["tar", "xf", "-"],
            "not an archive at all, but long enough to fill a header block? no",
            "tar: This does not look like a tar archive\ntar: Exiting with failure status due to previous errors\n",
            2,
        ),
        (
            &["tar", "cf", "/tmp/x.tar", "/nope"],
            "",
            "tar: Removing leading `/' from member names\ntar: /nope: Cannot stat: No such file or directory\ntar: Exiting with failure status due to previous errors\n",
            2,
        ),
        (
            &["tar", "xf", "-", "-C", "/nope"],
            "",
            "tar: /nope: Cannot chdir: No such file or directory\ntar: Error is not recoverable: exiting now\n",
            2,
        ),
        (
            &["tar", "--frobnicate"],
            "",
            "tar: unrecognized option '--frobnicate'\ntar: Try 'tar --help' or 'tar --usage' for more information.\n",
            2,
        ),
        (&["tar", "xf", "-"], "", "", 0),
    ];
    for (argv, stdin, stderr, status) in cases {
        let ran = run_in(&c, argv, Some(vec![stdin.as_bytes()])).await;
        assert_eq!(
            (ran.stderr.as_str(), ran.status),
            (*stderr, *status),
            "{argv:?}"
        );
    }
}
