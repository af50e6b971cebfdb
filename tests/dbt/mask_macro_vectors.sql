{#-
    The change-mask macros against the vectors of formats/qlik_change_tables.md: returns the
    vectors the macros get wrong (none when they are right).
-#}

with

bit_vectors as (
    select * from values
    ('008080', 7, 'lsb_last_hex', true),
    ('008080', 15, 'lsb_last_hex', true),
    ('008080', 8, 'lsb_last_hex', false),
    ('008080', 23, 'lsb_last_hex', false),
    ('008080', 15, 'lsb_first_byte', true),
    ('008080', 23, 'lsb_first_byte', true),
    ('008080', 7, 'lsb_first_byte', false),
    ('0B', 0, 'lsb_last_hex', true),
    ('0B', 2, 'lsb_last_hex', false),
    ('0B', 3, 'lsb_last_hex', true),
    ('3A70', 9, 'lsb_last_hex', true),
    ('3A70', 10, 'lsb_last_hex', false),
    ('3A70', 13, 'lsb_last_hex', true),
    ('', 0, 'lsb_last_hex', false) as vectors (mask_hex, bit_index, bit_order, is_set)
),

bit_results as (
    select
        concat('bit ', mask_hex, ' ', bit_index, ' ', bit_order) as vector,
        {{ cdc_mask_bit('mask_hex', 'bit_index', 'bit_order') }} = is_set as is_right
    from bit_vectors
),

column_vectors as (
    select
        '0200' as mask_hex,
        array(
            'header__change_seq', 'header__change_oper', 'header__change_mask', 'header__stream_position',
            'header__operation', 'header__transaction_id', 'header__timestamp', 'ID', 'NAME', 'CITY'
        ) as column_names,
        7 as first_bit,
        array('CITY') as expected_columns
    union all
    select
        '008080',
        array(
            'item_no', 'mfg_div_cd', 'phys_loc_cd', 'plnr_cd', 'inv_class_cd', 'use_um_cd', 'byr_cd', 'item_desc',
            'itm_aut_ord_fct', 'itm_ord_mod_cd', 'itm_whs_ctl_cd', 'itm_aut_ord_cd', 'gnr_pt_no_ind', 'div_adr_no',
            'ems_rel_cd', 'load_date_time'
        ),
        0,
        array('item_desc', 'load_date_time')
),

column_results as (
    select
        concat('columns ', mask_hex) as vector,
        {{ cdc_changed_columns('mask_hex', 'column_names', 'first_bit') }} = expected_columns as is_right
    from column_vectors
),

all_results as (
    select * from bit_results
    union all
    select * from column_results
)

select * from all_results
where not coalesce(is_right, false)
