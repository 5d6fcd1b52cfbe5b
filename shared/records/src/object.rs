//! serde's derived structs also take an array of their fields in order
//! (`"quota": [null, null]`); a body's objects are JSON objects only, as
//! the description says. The top level is held to it by `berth_api`'s `JsonBody`, a
//! nested object by `#[serde(deserialize_with = "object::optional")]`
//! (`Option<T>`) or `object::optional_list` (`Option<Vec<T>>`).

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// An object, never an array.
pub fn deserialize<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_map(Only(PhantomData))
}

/// An object or `null`.
pub fn optional<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_option(Maybe(Only(PhantomData)))
}

/// An array of objects, or `null`.
pub fn optional_list<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_option(Maybe(List(PhantomData)))
}

struct Only<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Only<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_map(self)
    }
}

struct List<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for List<T> {
    type Value = Vec<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Only(PhantomData))? {
            items.push(item);
        }
        Ok(items)
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for List<T> {
    type Value = Vec<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<T>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

/// `null`, or what `V` reads.
struct Maybe<V>(V);

impl<'de, V: DeserializeSeed<'de> + Visitor<'de, Value = <V as DeserializeSeed<'de>>::Value>>
    Visitor<'de> for Maybe<V>
{
    type Value = Option<<V as DeserializeSeed<'de>>::Value>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(formatter)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(deserializer).map(Some)
    }
}
