//! A JSON value that keeps the order of an object's keys, as rt-app needs:
//! the events of a phase run in the order the file lists them (json-c,
//! which rt-app parses with, iterates objects in insertion order). The
//! crate's `serde_json::Value` sorts keys, so objects are read here with
//! their own visitor. A key given twice in one object is refused: json-c
//! would keep only the last one, and rt-app's workgen renames duplicates
//! (`run`, `run1`, ...) before rt-app sees them.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A JSON value whose objects keep their key order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits i64.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, keys in file order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// What kind of value this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Int(_) => "an integer",
            Json::Float(_) => "a number",
            Json::Str(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl Json {
    /// The value as JSON text, objects in their order.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        let quote = |s: &str| serde_json::to_string(s).expect("a string serialises");
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => out.push_str(&i.to_string()),
            Json::Float(f) => out.push_str(&serde_json::to_string(f).expect("finite")),
            Json::Str(s) => out.push_str(&quote(s)),
            Json::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    x.write(out);
                }
                out.push(']');
            }
            Json::Object(o) => {
                out.push('{');
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&quote(k));
                    out.push_str(": ");
                    x.write(out);
                }
                out.push('}');
            }
        }
    }

    /// Set `key` of an object (appended if absent); no-op on a non-object.
    pub fn set(&mut self, key: &str, v: Json) {
        if let Json::Object(o) = self {
            match o.iter_mut().find(|(k, _)| k == key) {
                Some((_, x)) => *x = v,
                None => o.push((key.to_string(), v)),
            }
        }
    }

    /// The value of `key` of an object.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(o) => o.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(i64::try_from(v).map_or(Json::Float(v as f64), Json::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(Json::Array(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut v: Vec<(String, Json)> = Vec::new();
        while let Some((k, x)) = map.next_entry::<String, Json>()? {
            if v.iter().any(|(have, _)| *have == k) {
                return Err(de::Error::custom(format!(
                    "key `{k}` is given twice in one object (number the repeats: `{k}1`, `{k}2`, as rt-app's workgen does)"
                )));
            }
            v.push((k, x));
        }
        Ok(Json::Object(v))
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_key_order_and_refuses_duplicates() {
        let j: Json =
            serde_json::from_str(r#"{"run": 1, "sleep": 2, "a": [true, null, 1.5]}"#).unwrap();
        let Json::Object(o) = j else { panic!() };
        let keys: Vec<&str> = o.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["run", "sleep", "a"]);
        assert_eq!(
            o[2].1,
            Json::Array(vec![Json::Bool(true), Json::Null, Json::Float(1.5)])
        );
        let mut j: Json =
            serde_json::from_str(r#"{"b": {"x": "q\""}, "a": [1, 2.5, null]}"#).unwrap();
        j.get_mut("b").unwrap().set("y", Json::Bool(false));
        assert_eq!(
            j.to_text(),
            r#"{"b": {"x": "q\"", "y": false}, "a": [1, 2.5, null]}"#
        );
        let e = serde_json::from_str::<Json>(r#"{"run": 1, "run": 2}"#).unwrap_err();
        assert!(e.to_string().contains("key `run` is given twice"), "{e}");
    }
}
