"""eventrag.storage"""
