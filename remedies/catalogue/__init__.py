"""Catalogue data: one YAML file per component (a package so the YAML ships as package data)."""
