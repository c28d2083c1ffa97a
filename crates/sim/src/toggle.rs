//! One declaration per kernel toggle, as the kernel's `SCHED_FEAT()` list
//! is one line per feature (kernel/sched/features.h): [`toggles!`] turns a
//! family's list into its struct (the fields), its table (name, values,
//! description, for `--list-features`), its per-version defaults and its
//! setter. Every family is declared with it: the wake-up path's
//! `placement::linux` `Features`, the balancer's `LbFeatures`, the idle
//! loop's, NUMA balancing's, the pipes' and sockets' and the fair class's.
//!
//! A toggle is a line
//!
//! ```text
//! /// doc
//! pub field: Type = default_for_version, "name" ("a|b": "a" => A, "b" => B) => "description";
//! ```
//!
//! where the value list may be left out for a `bool` toggle, which takes
//! `on|off` (`true|false`, `1|0` too). Defaults are expressions of the
//! version `(major, minor)` and of `ge(major, minor)` (the version is at
//! least that), under the names the family's `defaults(name, v, ge)` line
//! gives them.
//!
//! After that line a family may ask for its public entry points, each with
//! its doc: `fn for_version = "doc";` (the toggles of a version),
//! `fn set = "doc";` (set one toggle: `Ok(false)` when it is not the
//! family's) and `impl Default = (7, 0), "doc";` (the toggles of that
//! version). A family whose entry points do more (the wake-up path's
//! profile name and override list, the fair class's discipline check)
//! writes them around `declared` and `set_declared` itself.

/// `on|off` (and `true|false`, `1|0`) for a bool toggle.
pub fn on_off(value: &str) -> Result<bool, &'static str> {
    match value {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err("on|off"),
    }
}

/// The values of a toggle, as its table lists them.
#[doc(hidden)]
#[macro_export]
macro_rules! __toggle_values {
    () => {
        "on|off"
    };
    ($vals:literal) => {
        $vals
    };
}

/// Parse a toggle's value: `on|off` for a bool, or its own list.
#[doc(hidden)]
#[macro_export]
macro_rules! __toggle_parse {
    ($value:expr) => {
        $crate::toggle::on_off($value)
    };
    ($value:expr, $vals:literal, $($vs:literal => $vv:expr),+) => {
        match $value {
            $($vs => Ok($vv),)+
            _ => Err($vals),
        }
    };
}

/// Declare a family of kernel toggles (see the module doc): the struct with
/// its plain fields and its toggles, the table `T` of (name, values,
/// description), `fn declared(name, version) -> Self` with every field at
/// its default, and `fn set_declared(&mut self, name, value)`: `Ok(true)`
/// when `name` is one of the family's toggles and was set, `Ok(false)` when
/// it is not, `Err(valid values)` for a bad value; and, when asked for,
/// `pub fn for_version(version)`, `pub fn set(&mut self, name, value)` (the
/// two without a profile name) and `Default`.
#[macro_export]
macro_rules! toggles {
    (
        $(#[$smeta:meta])*
        $svis:vis struct $S:ident {
            $( $(#[$pmeta:meta])* $pvis:vis $pf:ident : $pty:ty = $pdef:expr ; )*
        }
        $(#[$tmeta:meta])*
        table $tvis:vis $T:ident;
        defaults($name:ident, $v:ident, $ge:ident);
        $( fn for_version = $for_version_doc:literal ; )?
        $( fn set = $set_doc:literal ; )?
        $( impl Default = $default_v:expr, $default_doc:literal ; )?
        toggles {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $f:ident : $fty:ty = $fdef:expr,
                $tname:literal $( ($vals:literal : $($vs:literal => $vv:expr),+ $(,)?) )? => $tdesc:literal ;
            )*
        }
    ) => {
        $(#[$smeta])*
        $svis struct $S {
            $( $(#[$pmeta])* $pvis $pf: $pty, )*
            $( $(#[$fmeta])* $fvis $f: $fty, )*
        }

        $(#[$tmeta])*
        $tvis static $T: &[(&str, &str, &str)] = &[
            $( ($tname, $crate::__toggle_values!($($vals)?), $tdesc), )*
        ];

        impl $S {
            /// Every field at its default for kernel version `v` (the
            /// family's one declaration, [`crate::toggle`]).
            #[allow(clippy::double_comparisons)]
            fn declared($name: &str, $v: (u32, u32)) -> $S {
                #[allow(unused_variables)]
                let $ge = |a: u32, b: u32| $v >= (a, b);
                let _ = $name;
                $S {
                    $( $pf: $pdef, )*
                    $( $f: $fdef, )*
                }
            }

            /// Set toggle `name` to `value`. Ok(false): not one of this
            /// family's toggles; Err(valid values): a bad value.
            pub fn set_declared(&mut self, name: &str, value: &str) -> Result<bool, &'static str> {
                match name {
                    $( $tname => {
                        self.$f = $crate::__toggle_parse!(value $(, $vals, $($vs => $vv),+)?)?;
                    } )*
                    _ => return Ok(false),
                }
                Ok(true)
            }

            $(
                #[doc = $for_version_doc]
                pub fn for_version(v: (u32, u32)) -> $S {
                    $S::declared("", v)
                }
            )?

            $(
                #[doc = $set_doc]
                pub fn set(&mut self, name: &str, value: &str) -> Result<bool, &'static str> {
                    self.set_declared(name, value)
                }
            )?
        }

        $(
            impl Default for $S {
                #[doc = $default_doc]
                fn default() -> Self {
                    $S::declared("", $default_v)
                }
            }
        )?
    };
}

#[cfg(test)]
mod tests {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Mode {
        A,
        B,
    }

    crate::toggles! {
        /// A test family.
        #[derive(Debug, PartialEq)]
        struct Fam {
            /// Plain.
            plain: u32 = if ge(5, 0) { 2 } else { 1 };
        }
        /// Its table.
        table FAM;
        defaults(_name, v, ge);
        fn for_version = "Its toggles of a version.";
        fn set = "Set one.";
        impl Default = (6, 0), "The 6.0 toggles.";
        toggles {
            /// A bool.
            on: bool = ge(6, 0), "fam_on" => "a bool toggle";
            /// An enum.
            mode: Mode = if v == (5, 12) { Mode::B } else { Mode::A },
                "fam_mode" ("a|b": "a" => Mode::A, "b" => Mode::B) => "an enum toggle";
        }
    }

    #[test]
    fn one_declaration_gives_field_table_default_and_setter() {
        assert_eq!(
            FAM,
            [
                ("fam_on", "on|off", "a bool toggle"),
                ("fam_mode", "a|b", "an enum toggle")
            ]
        );
        let old = Fam::declared("x", (4, 18));
        assert_eq!((old.plain, old.on, old.mode), (1, false, Mode::A));
        let mut f = Fam::declared("x", (5, 12));
        assert_eq!((f.plain, f.on, f.mode), (2, false, Mode::B));
        assert_eq!(f.set_declared("fam_on", "on"), Ok(true));
        assert_eq!(f.set_declared("fam_mode", "a"), Ok(true));
        assert!(f.on && f.mode == Mode::A);
        assert_eq!(f.set_declared("fam_mode", "c"), Err("a|b"));
        assert_eq!(f.set_declared("fam_on", "maybe"), Err("on|off"));
        assert_eq!(f.set_declared("other", "on"), Ok(false));
        // the entry points asked for
        assert_eq!(Fam::for_version((5, 12)), Fam::declared("", (5, 12)));
        assert_eq!(Fam::default(), Fam::declared("", (6, 0)));
        assert_eq!(f.set("fam_on", "off"), Ok(true));
        assert_eq!(f.set("fam_mode", "c"), Err("a|b"));
        assert_eq!(f.set("other", "on"), Ok(false));
    }
}
