//! One declaration per cost: [`cost_fields!`] turns the list of
//! [`MachineCosts`](super::MachineCosts)' fields, each with its doc comment
//! and its one-line meaning, into the struct and its table of meanings (the
//! comment above each key of a profile file, `schedlab costs show`), so a
//! field and what it means are written in one place, as a kernel toggle is
//! (`crate::toggle`).
//!
//! A field is a line
//!
//! ```text
//! /// doc
//! pub field: Type => "meaning in one line",
//! ```
//!
//! The field's name is its key in a profile file (serde's default): the
//! fields are declared in key order and are renamed by no attribute.

/// Declare a cost struct (see the module doc): the struct with every
/// attribute and field as written, and on it `MEANINGS`, the (key, meaning)
/// of every field in declaration order, and `fn meaning(key)`.
macro_rules! cost_fields {
    (
        $(#[$smeta:meta])*
        $svis:vis struct $S:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $f:ident : $fty:ty => $meaning:literal
            ),* $(,)?
        }
    ) => {
        $(#[$smeta])*
        $svis struct $S {
            $( $(#[$fmeta])* $fvis $f: $fty, )*
        }

        impl $S {
            /// Each key (field) with what it means, in one line (the
            /// comment above the key in a profile file), in the order
            /// the fields are declared.
            pub const MEANINGS: &'static [(&'static str, &'static str)] = &[
                $( (stringify!($f), $meaning), )*
            ];

            /// The one-line meaning of a key, if it is one of the fields.
            pub fn meaning(key: &str) -> Option<&'static str> {
                Self::MEANINGS
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, m)| *m)
            }
        }
    };
}

pub(crate) use cost_fields;

#[cfg(test)]
mod tests {
    super::cost_fields! {
        /// A test struct.
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
        struct Two {
            /// First.
            pub a_ns: u64 => "the first, ns",
            /// Second.
            #[serde(skip)]
            b: [u32; 2] => "the second, a pair",
        }
    }

    #[test]
    fn one_declaration_gives_the_fields_and_their_meanings() {
        assert_eq!(
            Two::MEANINGS,
            [("a_ns", "the first, ns"), ("b", "the second, a pair")]
        );
        assert_eq!(Two::meaning("b"), Some("the second, a pair"));
        assert_eq!(Two::meaning("c"), None);
        let t = Two { a_ns: 3, b: [1, 2] };
        assert_eq!(t.clone(), t);
        assert_eq!(t.b, [1, 2]);
    }
}
